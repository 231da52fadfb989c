import JetstreamModel
import Store
import Synchronization

/// A submission to validate again once its scope has caught up from a shared store: its append
/// lost a version race to another node, or it was refused on this node's copy, which may be
/// behind the store (another node's version not followed yet).
struct Revalidation: Sendable {
    let submission: ScopeEngine.Submission
    let ifMatch: VersionCondition?
    let idempotency: IdempotencyKey?
    /// Lost races so far (bounded by ``ScopeEngineConfiguration/conflictRetries``); a refusal
    /// does not count one.
    let attempt: Int
    let completion: @Sendable (SubmitOutcome) -> Void
}

extension ScopeEngine {
    /// Whether `rejection`, judged on this node's copy of a scope, may be wrong at the store's
    /// latest version: on a shared store another node may have committed what makes the
    /// submission valid (the object it changes, the version its `If-Match` names) and this node's
    /// follower not have applied it yet. A refusal is final for a client (a 422 rolls the change
    /// back, a 412 makes it refetch), so such a rejection is answered only once judged again
    /// after a catch-up — a 412 then also names the store's version, not this node's. On a store
    /// only this node writes, the copy is the store's latest: never.
    func mayBeBehind(_ rejection: ScopeError) -> Bool {
        switch rejection {
        case .changeSetRejected, .mergePatchRejected, .objectNotFound, .versionMismatch, .methodRejected:
            store is any SharedChangeLogStore
        default:
            false
        }
    }

    /// Queues `revalidation` on `handle` — after `prepare`, under the same lock — and starts the
    /// rounds unless they run: the submissions queued meanwhile share a round's catch-up.
    func queue(
        _ revalidation: Revalidation, on handle: ScopeHandle,
        prepare: (inout ScopeHandle.Runtime) -> Void = { _ in }
    ) {
        let schedule = handle.runtime.withLock { runtime -> Bool in
            prepare(&runtime)
            runtime.revalidations.append(revalidation)
            defer { runtime.revalidationScheduled = true }
            return !runtime.revalidationScheduled
        }
        if schedule { Task { await revalidate(on: handle) } }
    }

    /// Rounds, while submissions are queued: the scope catches up from the shared log once, then
    /// the queued submissions are staged again, in their order, on the newer state.
    ///
    /// A submission queued before a round's catch-up began is then judged at least at the
    /// store's head of that moment — later than its refusal, so later than any version
    /// acknowledged before its request came: a refusal now is final. One queued while the
    /// catch-up ran may have been refused on a state that read preceded: it is staged again too,
    /// and if refused once more, the next round judges it (so at most two catch-ups per refusal:
    /// this task stays the queue's only runner until the queue is empty).
    private func revalidate(on handle: ScopeHandle) async {
        while true {
            // Full jitter, growing with the races lost (up to 1 ms after the first, 32 at most):
            // nodes racing on one scope spread out instead of colliding again.
            // A refusal, or a write to a cold copy, lost no race: it waits for nothing.
            let lostRaces = handle.runtime.withLock { $0.revalidations.map(\.attempt).max() ?? 0 }
            if lostRaces > 0 {
                let ceiling = min(1 << (lostRaces - 1), 32)
                try? await Task.sleep(for: .microseconds(Int.random(in: 0...(ceiling * 1000))))
            }
            let queuedBefore = handle.runtime.withLock { $0.revalidations.count }
            // A cold copy far behind reloads from a snapshot rather than replay the whole gap.
            let current = await (handle.lagsStore ? self.current(handle) : catchUp(handle.name)) ?? handle
            let revalidations = handle.runtime.withLock { runtime in
                defer { runtime.revalidations = [] }
                return runtime.revalidations
            }
            for (index, revalidation) in revalidations.enumerated() {
                stage(
                    revalidation.submission, to: current, ifMatch: revalidation.ifMatch,
                    idempotency: revalidation.idempotency, attempt: revalidation.attempt,
                    judgedAtStoreHead: index < queuedBefore, completion: revalidation.completion)
            }
            let done = handle.runtime.withLock { runtime -> Bool in
                guard runtime.revalidations.isEmpty else { return false }
                runtime.revalidationScheduled = false
                return true
            }
            if done { return }
        }
    }
}
