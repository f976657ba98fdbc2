// The operations of the service's OpenAPI document the fuzzer sends requests to: method, path,
// parameters, request body schema and documented responses, public /api/v1 and operator /admin/v1.
export type Schema = { [key: string]: unknown };

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}

export interface Operation {
  method: string;
  path: string;
  operationId: string;
  admin: boolean;
  creates: boolean;
  parameters: Parameter[];
  body: Schema | undefined;
  bodyRequired: boolean;
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
}

export function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function operationsOf(document: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    if (!path.startsWith('/api/v1/') && !path.startsWith('/admin/v1/')) continue;
    for (const [method, raw] of Object.entries(methods)) {
      if (!isObject(raw) || !isObject(raw.responses)) continue;
      const parameters = (Array.isArray(raw.parameters) ? raw.parameters : []) as Parameter[];
      const requestBody = isObject(raw.requestBody) ? raw.requestBody : undefined;
      const content = requestBody && isObject(requestBody.content) ? requestBody.content : undefined;
      const json = content && isObject(content['application/json']) ? content['application/json'] : undefined;
      ops.push({
        method: method.toUpperCase(),
        path,
        operationId: String(raw.operationId),
        admin: path.startsWith('/admin/v1/'),
        creates: parameters.some((p) => p.in === 'header' && p.name === 'idempotency-key' && p.required),
        parameters,
        body: json && isObject(json.schema) ? json.schema : undefined,
        bodyRequired: requestBody?.required === true,
        responses: raw.responses as Operation['responses'],
      });
    }
  }
  return ops;
}
