/**
 * The memory a sandbox worker shares with the main thread (`SHARED_BYTES`), written without
 * messages: at Int32 index `ABORT_INDEX` the abort flag (set by the main thread), at Int32 index
 * `STARTED_ID_INDEX` the id of the job whose code started, and at Float64 index
 * `STARTED_AT_INDEX` when it started (`performance.timeOrigin + performance.now()`), both set by
 * the worker. A module of its own, free of side effects: the main thread must not import the
 * worker's entry (which listens on `parentPort` when there is one) nor the engine.
 */
export const SHARED_BYTES = 16;
export const ABORT_INDEX = 0;
export const STARTED_ID_INDEX = 1;
export const STARTED_AT_INDEX = 1;
