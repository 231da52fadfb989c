import HTTPServer
import ScopeEngine

extension Gateway {
    /// Answers a read with `respond` on the scope's current copy: at once, on the connection's
    /// loop, when this node's copy has every version the shared store announced (always, on a
    /// store only this node writes); after a catch-up in a task when the follower left the copy
    /// behind because no client of this node used it (``ScopeEngine/current(_:)``).
    static func answerOnCurrentCopy(
        of name: String, engine: ScopeEngine, context: HTTPRequestContext,
        _ respond: @escaping @Sendable (ScopeHandle) throws(Problem) -> HTTPServerResponse
    ) -> HTTPServerResponse {
        let found = Result { () throws(Problem) -> ScopeHandle in
            try Problem.mapping { () throws(ScopeError) in try engine.existingHandle(name) }
        }
        switch found {
        case .failure(let problem):
            return problem.response
        case .success(let handle) where !handle.lagsStore:
            return answer { () throws(Problem) in try respond(handle) }
        case .success(let handle):
            return answerAsync(context) { () async throws(Problem) in
                guard let current = await engine.current(handle) else {
                    throw Problem(ScopeError.scopeNotFound(name))
                }
                return try respond(current)
            }
        }
    }
}
