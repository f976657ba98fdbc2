// Vite's client types: CSS and asset imports.
/// <reference types="vite/client" />
