import { hash, k, list } from './_common.mjs';

const KEYS = [k('metrics:completed'), k('metrics:completed:data')];
// The minutes around now (1700000100000, a minute's start).
const m = (offset) => String(1700000100000 + offset * 60000);

export default {
  script: 'recordMetrics-2.lua',
  about: 'One minute\'s count of finished jobs (docs/protocol.md, "Metrics"): KEYS metrics:<type> (hash count, prevTS, prevCount), metrics:<type>:data (list of closed minutes, newest first); ARGV jobs, the minute\'s start (another time is taken as the minute it falls in), maxDataPoints. No prevTS: the minute opens. A later minute, gap minutes after prevTS: the open minute\'s count (count - prevCount) pushed, then gap - 1 zeros, LTRIM to maxDataPoints, the minute opens (prevTS, prevCount = count); a gap over maxDataPoints: the list becomes maxDataPoints zeros. The open minute: count only. An earlier minute: LSET of its entry when the list holds it (LLEN, whatever this call\'s maxDataPoints), and prevCount grows with count. Returns the new count.',
  cases: [
    {
      name: 'the first count: the minute opens (prevTS, prevCount 0), no list',
      before: {},
      keys: KEYS,
      argv: ['3', m(0), '10'],
    },
    {
      name: 'the open minute again: count only',
      before: { [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '0', 'count', '3') },
      keys: KEYS,
      argv: ['2', m(0), '10'],
    },
    {
      name: 'a time inside the open minute is taken as that minute',
      before: { [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '0', 'count', '3') },
      keys: KEYS,
      argv: ['2', String(1700000100000 + 45000), '10'],
    },
    {
      name: 'the next minute: the open one closes (its count pushed), the new one opens',
      before: {
        [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '10', 'count', '15'),
        [k('metrics:completed:data')]: list('4', '6'),
      },
      keys: KEYS,
      argv: ['1', m(1), '10'],
    },
    {
      name: 'three minutes later: the closing count, then two zeros for the silent minutes',
      before: {
        [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '10', 'count', '15'),
        [k('metrics:completed:data')]: list('4', '6'),
      },
      keys: KEYS,
      argv: ['1', m(3), '10'],
    },
    {
      name: 'a full list: trimmed to maxDataPoints, the oldest minute dropped',
      before: {
        [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '10', 'count', '15'),
        [k('metrics:completed:data')]: list('4', '6', '0'),
      },
      keys: KEYS,
      argv: ['1', m(1), '3'],
    },
    {
      name: 'a gap over maxDataPoints: the list becomes maxDataPoints zeros (even the closing count is out of range)',
      before: {
        [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '10', 'count', '15'),
        [k('metrics:completed:data')]: list('4', '6', '1'),
      },
      keys: KEYS,
      argv: ['2', m(5), '3'],
    },
    {
      name: 'an earlier minute the list holds: its entry grows (LSET), prevCount too, so the open minute does not',
      before: {
        [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '10', 'count', '15'),
        [k('metrics:completed:data')]: list('4', '6', '1'),
      },
      keys: KEYS,
      argv: ['2', m(-2), '10'],
    },
    {
      name: 'an earlier minute the list holds beyond this caller\'s maxDataPoints (another worker keeps more): its entry grows all the same',
      before: {
        [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '10', 'count', '15'),
        [k('metrics:completed:data')]: list('4', '6', '1'),
      },
      keys: KEYS,
      argv: ['2', m(-3), '1'],
    },
    {
      name: 'an earlier minute older than the list\'s oldest entry: counted in count (and prevCount) only',
      before: {
        [k('metrics:completed')]: hash('prevTS', m(0), 'prevCount', '10', 'count', '15'),
        [k('metrics:completed:data')]: list('4', '6'),
      },
      keys: KEYS,
      argv: ['2', m(-5), '10'],
    },
  ],
};
