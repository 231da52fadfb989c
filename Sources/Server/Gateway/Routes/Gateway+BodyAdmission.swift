import HTTPServer
import HTTPTypes
import ScopeEngine

extension Gateway {
    /// Which writes the gateway refuses without reading their bodies (``BodyAdmission``): the
    /// request is routed at once without its body — the access gate and the handler answer it
    /// exactly as they would have after reading it (401, 415, 404) — no `100 Continue` is sent and
    /// the body is never read. A request that may succeed gets its body read as usual.
    ///
    /// ```swift
    /// router.post("/v1/scopes/{name}/changesets", middleware: [gate(.write)],
    ///             admitBody: refusesBeforeBody(mediaTypes: ["application/json"], scopeMustExist: true)) { … }
    /// ```
    func refusesBeforeBody(mediaTypes: Set<String>, scopeMustExist: Bool) -> BodyAdmission {
        let engine = self.engine
        let access = self.access
        return { request, parameters in
            let name = parameters["name"] ?? ""
            switch RequestToken.find(in: request) {
            case .malformed:
                return true  // 401 from the access gate
            case .none:
                // No token where anonymous clients may not write: 401 from the access gate.
                if access.verifier != nil, !access.policy.auth.anonymousGrant.allows(.write, scope: name) {
                    return true
                }
            case .token:
                break  // verified by the gate once the body is in (it may take a task)
            }
            // The handlers check the media type, and a compressed body, before they parse: 415.
            guard mediaTypes.contains(Self.mediaType(of: request)) else { return true }
            if let coding = request.headerFields.value(of: .contentEncoding),
                coding.trimmingSpaces.lowercased() != "identity"
            {
                return true
            }
            // A write to a scope that does not exist: 404.
            return scopeMustExist && engine.handle(named: name) == nil
        }
    }
}
