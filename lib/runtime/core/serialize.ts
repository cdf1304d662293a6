import { EchoMQOptionError } from '../../protocol/errors.js';

/** Default cap on one job's data, as JSON: large payloads belong in a store, with the key in the job. */
export const DEFAULT_MAX_DATA_BYTES = 1024 * 1024;

/**
 * JSON.stringify that refuses what JSON would silently change or drop (functions, symbols,
 * BigInt, NaN and Infinity, Map and Set) and cycles, with an error that names the path.
 */
export function toJson(value: unknown, field: string, maxBytes = Infinity): string {
  let text: string | undefined;
  try {
    // null, a string or a boolean: JSON carries them as they are, so no replacer to check them with
    // (most handlers return nothing: every job's returnvalue passes here).
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return sized(JSON.stringify(value), field, maxBytes);
    // The path is built only on the way to an error: the replacer runs for every value.
    const where = (key: string) => (key === '' ? field : `${field}.${key}`);
    text = JSON.stringify(value === undefined ? {} : value, (key, item: unknown) => {
      switch (typeof item) {
        case 'function':
        case 'symbol':
          throw new EchoMQOptionError(where(key), `is a ${typeof item}, which JSON cannot carry`);
        case 'bigint':
          throw new EchoMQOptionError(where(key), 'is a BigInt, which JSON cannot carry; send it as a string');
        case 'number':
          if (!Number.isFinite(item)) throw new EchoMQOptionError(where(key), `is ${item}, which JSON would turn into null`);
          break;
        case 'object':
          if (item instanceof Map || item instanceof Set) {
            throw new EchoMQOptionError(where(key), `is a ${item.constructor.name}, which JSON would turn into {}; send an array or object`);
          }
      }
      return item;
    });
  } catch (error) {
    if (error instanceof EchoMQOptionError) throw error;
    throw new EchoMQOptionError(field, `cannot be represented as JSON: ${(error as Error).message.split('\n')[0]}`);
  }
  if (text === undefined) throw new EchoMQOptionError(field, 'cannot be represented as JSON');
  return sized(text, field, maxBytes);
}

/** `text`, unless it holds more than maxBytes (UTF-8): then an error naming the field. */
function sized(text: string, field: string, maxBytes: number): string {
  if (text.length > maxBytes / 3 && Buffer.byteLength(text) > maxBytes) {
    throw new EchoMQOptionError(field, `is ${Buffer.byteLength(text)} bytes as JSON, over the limit of ${maxBytes} (the option maxDataSize, or the job's sizeLimit)`);
  }
  return text;
}

/** JSON.parse that answers undefined for a missing field. */
export function fromJson<T>(text: string | undefined): T | undefined {
  return text === undefined || text === '' ? undefined : (JSON.parse(text) as T);
}
