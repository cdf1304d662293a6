import { EchoMQOptionError } from '../../protocol/errors.js';

/** A HELP or TYPE line: which of the two, the metric family it names, and the rest (the TYPE's type). */
const HEADER = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*)(?:[ \t]+(.*))?$/;
/** A sample line: a metric name, its labels if any (each value quoted, escapes allowed), then the value. */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"(?:[^"\\\n]|\\.)*"[ \t]*,?)*[ \t]*\})?[ \t]+\S/;
/**
 * The suffixes a family's samples may add to its name, by the family's TYPE (the text format and
 * OpenMetrics): a histogram's `_bucket`, `_sum`, `_count`, a summary's `_sum`, `_count`, a
 * counter's `_total`, and the `_created` of all three. A gauge, an untyped family, or one with
 * no TYPE has samples of its own name only.
 */
const SUFFIXES: Record<string, readonly string[]> = {
  histogram: ['_bucket', '_sum', '_count', '_created'],
  summary: ['_sum', '_count', '_created'],
  counter: ['_total', '_created'],
};

interface Family {
  type?: string;
  headers: string[];
  samples: string[];
}

/**
 * Several texts in the Prometheus text format as one scrape: each metric family's HELP and TYPE
 * lines once, then all its samples together, the families in the order they first appear. A
 * scrape refuses a second TYPE line for a metric, and the format wants a family's lines in one
 * group, so the texts of several queues (queue.exportPrometheusMetrics) and a prom-client
 * registry's (`await register.metrics()`) cannot simply be concatenated.
 *
 * A sample belongs to the family of the headers above it when its name is the family's, or the
 * family's with a suffix its TYPE allows (SUFFIXES: `_bucket`, `_sum`, `_count`, `_total`,
 * `_created`); else to the known family it names that way, else to a family of its own name.
 * Lines are trimmed (CRLF texts too); blank lines, other comments and lines that parse as neither
 * are dropped. Two TYPEs for one name throw an EchoMQOptionError naming the text (`texts[i]`):
 * no join of them is a valid scrape. Identical series (two queues of one name under two
 * prefixes) are not detected: give each text a label of its own (docs/observability.md).
 */
export function joinPrometheusTexts(...texts: string[]): string {
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let found = families.get(name);
    if (!found) families.set(name, (found = { headers: [], samples: [] }));
    return found;
  };
  /** Whether `name` is a sample of the family `base`: its own name, or a suffix its TYPE allows. */
  const belongsTo = (name: string, base: string) =>
    name === base || (SUFFIXES[families.get(base)?.type ?? ''] ?? []).some((suffix) => name === base + suffix);
  /** The family under the headers above, else a known family the name is of, else its own. */
  const ownerOf = (name: string, current: string | undefined) => {
    if (current !== undefined && belongsTo(name, current)) return current;
    if (families.has(name)) return name;
    const base = [...new Set(Object.values(SUFFIXES).flat())]
      .map((suffix) => (name.endsWith(suffix) ? name.slice(0, -suffix.length) : ''))
      .find((candidate) => candidate !== '' && families.has(candidate) && belongsTo(name, candidate));
    return base ?? name;
  };
  texts.forEach((text, i) => {
    let current: string | undefined;
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (line === '') continue;
      const header = HEADER.exec(line);
      if (header) {
        const [, kind, name, rest = ''] = header;
        const type = rest.trim();
        if (kind === 'TYPE' && !/^\w+$/.test(type)) continue; // not a TYPE line the format knows: dropped
        const found = family(name);
        if (kind === 'TYPE') {
          if (found.type !== undefined && found.type !== type) {
            throw new EchoMQOptionError(`texts[${i}]`, `metric ${name} is typed ${type} here and ${found.type} before: one scrape cannot hold both (rename one, or serve them on two routes)`);
          }
          found.type = type;
        }
        current = name;
        if (!found.headers.some((seen) => seen.startsWith(`# ${kind} `))) found.headers.push(line);
        continue;
      }
      if (line.startsWith('#')) continue;
      const sample = SAMPLE.exec(line);
      if (!sample) continue;
      family(ownerOf(sample[1], current)).samples.push(line);
    }
  });
  const lines = [...families.values()].flatMap(({ headers, samples }) => [...headers, ...samples]);
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}
