import CanvasModel
import Foundation
import Jetstream
import JetstreamClient

/// One typed client of a scope, as an app has it: a canvas, its scope and the sync, with what the
/// sync reported (refusals, statuses) and the transport that can inject faults.
@MainActor
final class Peer {
    let canvas: Canvas
    let scope: Scope
    let sync: ScopeSync
    let transport: FaultyTransport
    private(set) var rejections: [Rejection] = []
    private(set) var statuses: [ScopeSync.Status] = []

    private init(canvas: Canvas, scope: Scope, sync: ScopeSync, transport: FaultyTransport) {
        self.canvas = canvas
        self.scope = scope
        self.sync = sync
        self.transport = transport
        // Weak: a test that fails before it stops the sync drops its peer while the sync still
        // reports, and an unowned reference would then crash the whole test process.
        sync.onRejected { [weak self] rejection in self?.rejections.append(rejection) }
        sync.onStatusChange { [weak self] status in self?.statuses.append(status) }
    }

    /// Fetches scope `name` into a new canvas (`canvas` when given: created from it when missing).
    static func open(
        _ url: URL, scope name: String, canvas: Canvas = Canvas(), createIfMissing: Bool = false,
        transport: FaultyTransport = FaultyTransport(), configuration: Client.Configuration = Client.Configuration(),
        token: Client.TokenProvider? = nil
    ) async throws -> Peer {
        let scope = Scope(name: name, root: canvas)
        let client = Client(url: url, token: token, transport: transport, configuration: configuration)
        let sync = try await client.fetch(scope, createIfMissing: createIfMissing)
        return Peer(canvas: canvas, scope: scope, sync: sync, transport: transport)
    }

    var snapshot: CanvasSnapshot { CanvasSnapshot(canvas) }

    /// The shape with `uuid` on this canvas.
    func shape(_ uuid: UUID) -> Shape? {
        canvas.shapes.first { $0.uuid == uuid }
    }

    var localRejections: [Rejection] { rejections.filter(\.isLocal) }
    var serverRejections: [Rejection] { rejections.filter { !$0.isLocal } }

    /// Live, nothing pending, at `version`.
    func isIdle(at version: Int) -> Bool {
        sync.status == .live && sync.pendingCount == 0 && sync.version == version
    }

    var summary: String {
        "status \(sync.status), pending \(sync.pendingCount), version \(sync.version), \(snapshot)"
    }
}
