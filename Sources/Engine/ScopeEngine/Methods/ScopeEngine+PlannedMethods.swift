import JetstreamJSON
import JetstreamModel

/// Thrown by a planned method's staging when the scope moved past the state it was planned on.
struct PlanOutdated: Error {}

extension ScopeEngine {
    /// How often a planned method (``call(_:planning:args:claims:on:ifMatch:idempotency:origin:completion:)``)
    /// is planned again when the scope moved on while it was planned, before
    /// ``ScopeError/methodOutdated(method:attempts:)`` is answered.
    public static let methodPlanAttempts = 5

    /// A method whose work happens outside the scope's lock (a service over HTTP, docs/methods.md):
    /// `plan` gets the scope's durable state and returns the fragments and result — or a
    /// refusal — while the scope's other writes go on. The fragments are then staged **only on
    /// the version they were planned on**, as one change set, with every rule of a change set;
    /// when the scope moved meanwhile, `plan` runs again on the newer state, up to
    /// ``methodPlanAttempts`` times, then ``ScopeError/methodOutdated(method:attempts:)``.
    /// A keyed retry is answered from its key before anything is planned: `plan` does not run.
    public func call(
        _ name: String, planning plan: @escaping @Sendable (MethodCall) async -> Result<MethodOutcome, ScopeError>,
        args: JSONValue, claims: JSONValue? = nil, on handle: ScopeHandle, ifMatch: VersionCondition? = nil,
        idempotency: IdempotencyKey? = nil, origin: ChangeOrigin = ChangeOrigin(),
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        Task {
            if let idempotency, await answeredFromStore(idempotency, of: handle, completion: completion) { return }
            for attempt in 1...Self.methodPlanAttempts {
                guard let current = await self.current(handle) else {
                    return completion(.rejected(.scopeNotFound(handle.name)))
                }
                // If-Match is judged by the staging, under the lock, like a change set's.
                let state = current.committedState
                let call = MethodCall(
                    scope: handle.name, state: state, args: args, subject: origin.subject, claims: claims,
                    schema: schema)
                let outcome: MethodOutcome
                switch await plan(call) {
                case .success(let planned):
                    outcome = planned
                case .failure(let error):
                    guard let idempotency, error.isFinalForIdempotency else { return completion(.rejected(error)) }
                    return recordRejection(error, idempotency: idempotency, of: current, completion: completion)
                }
                let plannedVersion = state.version
                let staged = ScopeMethod(name) { call in
                    guard call.state.version == plannedVersion else { throw PlanOutdated() }
                    return outcome
                }
                let answer = await withCheckedContinuation { continuation in
                    self.call(
                        staged, args: args, claims: claims, on: current, ifMatch: ifMatch, idempotency: idempotency,
                        origin: origin, completion: { continuation.resume(returning: $0) })
                }
                guard case .rejected(.methodOutdated) = answer else { return completion(answer) }
                if attempt == Self.methodPlanAttempts {
                    return completion(.rejected(.methodOutdated(method: name, attempts: attempt)))
                }
            }
        }
    }
}
