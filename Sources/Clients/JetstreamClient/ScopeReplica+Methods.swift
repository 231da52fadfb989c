import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

extension ScopeReplica {
    /// ``ScopeSync/call(_:args:isolation:stub:)``: the call becomes a pending entry after every
    /// local change made before it, carrying the stub's edits (recorded like local changes, but
    /// kept as the call's), and is sent in order with the others.
    func call(
        _ name: String, args: JSONValue, stub: ((Scope) -> Void)?, isolation: isolated (any Actor) = #isolation
    ) async throws(ClientError) -> MethodAnswer {
        guard !isStopped else { throw stoppedError }
        // Earlier local writes are their own change sets, before the call.
        scope.flush()
        let method = PendingMethod(name: name, args: args)
        stubMethod = method
        stubKey = nil
        stub?(scope)
        scope.flush()
        stubMethod = nil
        let key: String
        if let recorded = stubKey {
            key = recorded
        } else {
            // No stub, a stub that changed nothing, or one the schema refused (reverted, reported).
            guard case .success(let made) = engine.local([], created: Self.now(), method: method) else {
                throw ClientError.invalidState("the call of \(name) could not be queued")
            }
            key = made
            storeAdded(key: key)
        }
        stubKey = nil
        wakeSender.yield()
        let outcome = await withCheckedContinuation { (waiter: CheckedContinuation<CallOutcome, Never>) in
            callWaiters[key] = waiter
        }
        switch outcome {
        case .answered(let answer): return answer
        case .failed(let error): throw error
        }
    }

    /// What a call's waiter is told.
    enum CallOutcome: Sendable {
        case answered(MethodAnswer)
        case failed(ClientError)
    }

    /// The sender's answer for a call: its waiter (if any) resumes.
    func settleCall(_ key: String, _ outcome: CallOutcome) {
        callWaiters.removeValue(forKey: key)?.resume(returning: outcome)
    }

    /// Every waiting call fails (the sync stopped).
    func failCalls() {
        let waiters = callWaiters
        callWaiters = [:]
        for (_, waiter) in waiters { waiter.resume(returning: .failed(stoppedError)) }
    }

    /// A call's `200`: its answer read from the body (the `ETag` names the version).
    static func methodAnswer(_ name: String, body: [UInt8], version: Int?) -> MethodAnswer {
        let json = try? JSONParser.parse(body)
        let fragments = json?["fragments"]?.array ?? []
        return MethodAnswer(
            method: name, version: version ?? json?["version"]?.number?.int64Value.map { Int($0) } ?? 0,
            result: json?["result"] ?? .null, changed: !fragments.isEmpty)
    }
}
