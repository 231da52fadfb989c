// backoff.mjs — how long to wait before the next try: exponential backoff with full jitter.
//
// Owns: `backoffDelay` (a pure function of the attempt, the bounds and a random draw). Which
// attempt comes next is decided by connection-state.mjs; scope.mjs waits. No imports.

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
