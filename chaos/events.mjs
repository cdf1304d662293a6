// The queue's event stream as the harness reads it after a run: what Redis says happened, in its order.

/** The queue's event stream: { event, jobId, reason?, delay?, prev?, at (the entry's ms) }. */
export async function readEvents(admin, key) {
  const entries = await admin.xrange(key, '-', '+');
  return entries.map(([id, fields]) => {
    const event = { at: Number(id.split('-')[0]) };
    for (let i = 0; i < fields.length; i += 2) event[fields[i]] = fields[i + 1];
    return event;
  });
}
