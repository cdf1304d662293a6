// The sandboxed processor of the "sandboxed no-op" scenarios, for EchoMQ and BullMQ alike: it
// returns the job's number, so the main process tallies each job from its 'completed' event.
export default async function noop(job) {
  return job.data.i;
}
