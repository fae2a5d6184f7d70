/**
 * The memory a sandbox worker shares with the main thread (`SHARED_BYTES`), written without
 * messages: at Int32 index `ABORT_INDEX` the abort flag (set by the main thread), at Int32 index
 * `STARTED_ID_INDEX` the id of the job whose code started, and at Float64 index
 * `STARTED_AT_INDEX` when it started (`performance.timeOrigin + performance.now()`), both set by
 * the worker; at Int32 index `ACK_INDEX` how many of the job's output batches the main thread has
 * taken (set to 0 with the abort flag before a job is posted, raised by the main thread once a
 * batch was delivered and its listener is not behind): the worker sends at most
 * `OUTPUT_IN_FLIGHT` batches ahead of it and otherwise waits, so a listener that cannot keep up
 * holds the code back. A module of its own, free of side effects: the main thread must not
 * import the worker's entry (which listens on `parentPort` when there is one) nor the engine.
 */
export const SHARED_BYTES = 24;
export const ABORT_INDEX = 0;
export const STARTED_ID_INDEX = 1;
export const STARTED_AT_INDEX = 1;
export const ACK_INDEX = 4;
/** Output batches a worker may have sent that the main thread has not taken yet. */
export const OUTPUT_IN_FLIGHT = 2;
