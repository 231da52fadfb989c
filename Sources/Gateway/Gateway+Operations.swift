import HTTPServer
import HTTPTypes

extension Gateway {
    /// `/healthz` (the process runs), `/readyz` (serving and the store answers; 503 while
    /// draining) and `/metrics` (Prometheus text).
    func addOperationRoutes(to router: inout Router) {
        let hub = self.hub
        router.get("/healthz") { _, _ in .json(#"{"status":"ok"}"#) }
        router.get("/readyz") { _, _ in
            guard let reason = await hub.readinessProblem() else { return .json(#"{"status":"ready"}"#) }
            return Problem(.notReady, detail: reason, headers: [.retryAfter: "5"]).response
        }
        router.get("/metrics") { _, _ in
            HTTPServerResponse(
                status: .ok, headerFields: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: hub.metrics.exposition())
        }
    }
}
