import JetstreamJSON
import JetstreamModel

extension ScopeEngine {
    /// Runs `method` on the scope's latest state and applies its fragments as one change set, with
    /// every rule of a change set: `If-Match` against the version it runs on, the idempotency key
    /// (a retry is answered from the key and the method does not run again), the limits, and one
    /// `changeset` event carrying `"method"`. The answer is the change set's with `"method"` and
    /// `"result"`; a method that returns no fragments answers the current version and makes none.
    /// A rejection (``MethodRejection``) is ``ScopeError/methodRejected(method:reason:)`` and any
    /// other error ``ScopeError/methodFailed(method:detail:)``; nothing is applied then.
    ///
    /// ```swift
    /// engine.call(arrange, args: ["columns": 4], on: handle, origin: ChangeOrigin(subject: "ada")) { outcome in … }
    /// ```
    public func call(
        _ method: ScopeMethod, args: JSONValue, claims: JSONValue? = nil, on handle: ScopeHandle,
        ifMatch: VersionCondition? = nil, idempotency: IdempotencyKey? = nil, origin: ChangeOrigin = ChangeOrigin(),
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        var origin = origin
        origin.method = method.name
        submit(
            Submission(.method(method, args: args, claims: claims), origin: origin), to: handle, ifMatch: ifMatch,
            idempotency: idempotency, completion: completion)
    }
}
