export * from './codes.js';
export * from './errors.js';
export * from './keys.js';
export * from './names.js';
export * from './script.js';
export * from './scripts.js';
