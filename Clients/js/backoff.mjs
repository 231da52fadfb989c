// backoff.mjs — how long to wait before the next try: exponential backoff with full jitter.
//
// Owns: `backoffDelay` (a pure function of the attempt, the bounds and a random draw) and `pause`
// (the wait itself, which an abort or a wake-up cuts short). Which attempt comes next is decided
// by connection-state.mjs. No imports.

/**
 * Exponential backoff with full jitter: a random delay in
 * [0, min(max, initial × 2^attempt)) milliseconds.
 *
 *   backoffDelay(0)   // 0…500 ms;   backoffDelay(10)  // 0…30 000 ms
 */
export function backoffDelay(attempt, { initial = 500, max = 30000 } = {}, random = Math.random) {
  const ceiling = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/**
 * Waits `ms` milliseconds, or less: until `signal` aborts or `cut()` is called (the browser came
 * back online, a reset wants every set sent now). `done` resolves either way, never rejects.
 *
 *   const wait = pause(backoffDelay(attempt - 1), abortSignal);
 *   this.cutWait = wait.cut;
 *   await wait.done;
 */
export function pause(ms, signal) {
  let cut;
  const done = new Promise((resolve) => {
    const finish = () => { clearTimeout(timer); signal?.removeEventListener("abort", finish); resolve(); };
    const timer = setTimeout(finish, ms);
    cut = finish;
    if (signal?.aborted) finish(); else signal?.addEventListener("abort", finish, { once: true });
  });
  return { done, cut };
}
