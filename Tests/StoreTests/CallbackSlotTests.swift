import Foundation
import Store
import Synchronization
import Testing

/// ``Store/CallbackSlot``: a callback read from any thread, any number of times, is the same
/// callback: a `Mutex` around the closure itself re-wrapped it in one more reabstraction thunk at
/// every read, until a call overflowed its thread's stack.
struct CallbackSlotTests {
    @Test("a callback called 20,000 times still runs on a thread with a 64 KiB stack")
    func manyCallsDoNotDeepenTheCall() async throws {
        let slot = CallbackSlot<Int>()
        let sum = Mutex(0)
        slot(1)  // nothing set yet: nothing happens
        #expect(!slot.isSet)
        slot.set { value in sum.withLock { $0 += value } }
        #expect(slot.isSet)
        for _ in 0..<20_000 { slot(1) }
        #expect(sum.withLock { $0 } == 20_000)

        // Each read of a closure kept in the Mutex itself added two frames to every later call:
        // 40,000 here, far beyond 64 KiB. The slot's call stays one frame deep.
        let called = DispatchSemaphore(value: 0)
        let thread = Thread {
            slot(1)
            called.signal()
        }
        thread.stackSize = 64 << 10
        thread.start()
        let answered = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: called.wait(timeout: .now() + 60) == .success)
            }
        }
        #expect(answered)
        #expect(sum.withLock { $0 } == 20_001)

        // A replaced callback is the one called.
        slot.set { value in sum.withLock { $0 -= value } }
        slot(1)
        #expect(sum.withLock { $0 } == 20_000)
    }
}
