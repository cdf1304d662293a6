import { hash, k, zset } from './_common.mjs';

const KEYS = [k('notices'), k('notice-data')];
const P = 'emq:{parents}:p';
const notice = (...fields) => JSON.stringify(fields);

export default {
  script: 'ackNotices-2.lua',
  about: 'Delivered notices go (docs/protocol.md, "Flows"): KEYS notices, notice-data; ARGV five fields an entry. A notice the runtime built (child id, parentKey, outcome, value, policy) goes (HDEL and ZREM) only while the stored one says what was delivered, compared field by field as cjson decodes it (JSON null read as ""); a newer notice of the child stays; stored data that is no notice (readNotice) goes whatever the entry says. Data the runtime read (child id, "", "", the data as read, "") goes only while HGET answers it byte for byte, whatever a parser makes of it. A child id without data is dropped from notices, not counted. Returns how many went.',
  cases: [
    {
      name: 'the notice as delivered: it goes, 1',
      before: {
        [k('notices')]: zset('c1', '1700000090000'),
        [k('notice-data')]: hash('c1', notice(P, 'completed', '{"page":1}', '')),
      },
      keys: KEYS,
      argv: ['c1', P, 'completed', '{"page":1}', ''],
    },
    {
      name: 'a newer notice of the child (it was retried and finished again): it stays, 0',
      before: {
        [k('notices')]: zset('c1', '1700000095000'),
        [k('notice-data')]: hash('c1', notice(P, 'completed', '{"page":2}', '')),
      },
      keys: KEYS,
      argv: ['c1', P, 'failed', 'boom', ''],
    },
    {
      name: 'compared as decoded, not as text: a stored "\\/" and a JSON null policy match "/" and "", 1',
      before: {
        [k('notices')]: zset('c1', '1700000090000'),
        [k('notice-data')]: hash('c1', '["emq:{parents}:p","completed","\\"a\\/b\\"",null]'),
      },
      keys: KEYS,
      argv: ['c1', P, 'completed', '"a/b"', ''],
    },
    {
      name: 'no data (an earlier ack took it): the id leaves notices, 0',
      before: { [k('notices')]: zset('c1', '1700000090000') },
      keys: KEYS,
      argv: ['c1', P, 'completed', '1', ''],
    },
    {
      name: 'data that is no notice (bad JSON, another shape, an unknown policy) goes whatever is asked; a real notice of another child in the same call goes too: 4',
      before: {
        [k('notices')]: zset('c1', '1700000090000', 'c2', '1700000090001', 'c3', '1700000090002', 'c4', '1700000090003', 'c5', '1700000090004'),
        [k('notice-data')]: hash(
          'c1', '{not json',
          'c2', '{"parentKey":"emq:{parents}:p"}',
          'c3', notice(P, 'failed', 'boom', 'retry'),
          'c4', notice(P, 'failed', 'boom', 'fail'),
          'c5', notice(P, 'completed', '7', ''),
        ),
      },
      keys: KEYS,
      argv: [
        'c1', P, 'completed', '1', '',
        'c2', P, 'completed', '1', '',
        'c3', P, 'completed', '1', '',
        'c4', P, 'failed', 'boom', 'fail',
        'c5', P, 'completed', '8', '',
      ],
    },
    {
      name: 'data read, sent back as read: it goes byte for byte, also JSON that cjson reads as a notice and JSON.parse refuses (NaN), 2',
      before: {
        [k('notices')]: zset('c1', '1700000090000', 'c2', '1700000090001'),
        [k('notice-data')]: hash('c1', '["emq:{parents}:p","failed","boom","",NaN]', 'c2', notice(P, 'completed', '"a/b"', '')),
      },
      keys: KEYS,
      argv: [
        'c1', '', '', '["emq:{parents}:p","failed","boom","",NaN]', '',
        'c2', '', '', notice(P, 'completed', '"a/b"', ''), '',
      ],
    },
    {
      name: 'data read, replaced since (a newer notice, or the same notice as other text): it stays, 0',
      before: {
        [k('notices')]: zset('c1', '1700000095000', 'c2', '1700000095001'),
        [k('notice-data')]: hash('c1', notice(P, 'completed', '{"page":2}', ''), 'c2', '["emq:{parents}:p","completed","1",null]'),
      },
      keys: KEYS,
      argv: [
        'c1', '', '', notice(P, 'completed', '{"page":1}', ''), '',
        'c2', '', '', notice(P, 'completed', '1', ''), '',
      ],
    },
    {
      name: 'data read, but no data now (an earlier ack took it): the id leaves notices, 0',
      before: { [k('notices')]: zset('c1', '1700000090000') },
      keys: KEYS,
      argv: ['c1', '', '', '{not json', ''],
    },
  ],
};
