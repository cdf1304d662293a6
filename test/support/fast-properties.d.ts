/** Types of fast-properties.js: whether V8 keeps an object's properties fast (not a dictionary). */
export function hasFastProperties(object: object): boolean;
