/** A HELP or TYPE line: which of the two, and the metric family it names. */
const HEADER = /^# (HELP|TYPE) (\S+)/;

interface Family {
  headers: string[];
  samples: string[];
}

/**
 * Several texts in the Prometheus text format as one scrape: each metric family's HELP and TYPE
 * lines once, then all its samples together, the families in the order they first appear. A
 * scrape refuses a second TYPE line for a metric, and the format wants a family's lines in one
 * group, so the texts of several queues (queue.exportPrometheusMetrics) and a prom-client
 * registry's (`await register.metrics()`) cannot simply be concatenated. A sample belongs to the
 * family of the headers above it when its name is the family's or extends it (`_bucket`, `_sum`,
 * `_count`), else to a family of its own name. Other comment lines and blank lines are dropped.
 */
export function joinPrometheusTexts(...texts: string[]): string {
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let found = families.get(name);
    if (!found) families.set(name, (found = { headers: [], samples: [] }));
    return found;
  };
  for (const text of texts) {
    let current: string | undefined;
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const header = HEADER.exec(line);
      if (header) {
        current = header[2];
        const { headers } = family(current);
        if (!headers.some((seen) => seen.startsWith(`# ${header[1]} `))) headers.push(line);
        continue;
      }
      if (line.startsWith('#')) continue;
      const name = /^[^\s{]+/.exec(line)![0];
      const owner = current !== undefined && (name === current || name.startsWith(`${current}_`)) ? current : name;
      family(owner).samples.push(line);
    }
  }
  const lines = [...families.values()].flatMap(({ headers, samples }) => [...headers, ...samples]);
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}
