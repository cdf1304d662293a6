/**
 * The protocol's side of queue.cancelJob (docs/protocol.md, "Cancelling jobs"), shared by every
 * runtime: the field that marks a job cancelled, and the meta field every worker reads at each
 * heartbeat tick to learn that jobs were marked.
 */

/** The job hash field cancelJob-12 writes: its presence marks the job cancelled; its value is the reason ("" for none). */
export const CANCEL_MARK_FIELD = 'cxl';

/**
 * The field of `P:{Q}:meta` (a partitioned queue's: partition 0's) that cancelJob-12 increments
 * whenever it marks a job a worker holds: a generation counter, never read as anything but "changed".
 */
export const CANCELS_FIELD = 'cancels';
