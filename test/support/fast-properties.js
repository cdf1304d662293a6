// hasFastProperties(object): whether V8 keeps the object's properties in its hidden class (fast)
// or in a dictionary (slow). Used by the tests that keep a handler's context fast, in Jest's
// process and in a sandbox (test/fixtures/sandbox/processor.mjs): an object literal with a getter
// goes slow, and each one then kept its job's whole run alive past the young-generation GCs
// (bench/README.md, "Where EchoMQ's time goes").
import v8 from 'node:v8';

// V8's flags are the whole process's; this one lets `new Function` below use %HasFastProperties.
v8.setFlagsFromString('--allow-natives-syntax');

/** @type {(object: object) => boolean} */
export const hasFastProperties = /** @type {any} */ (new Function('object', 'return %HasFastProperties(object)'));
