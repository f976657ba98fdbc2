// The published code systems every practice can use, by url (what a coding names as its system).
export const ICD10_URL = 'http://hl7.org/fhir/sid/icd-10';
export const TARIFF_URL = 'urn:service:codesystem:tariff';
