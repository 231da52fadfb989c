import Foundation
import JetstreamModel

/// The gateway's part in the `SyncEngine` schedules: the model core applies each posted set to the
/// server's state, replays the first outcome for a key it has seen, and records the events.
struct FakeServer {
    struct Event {
        let version: Int
        let fragments: [SyncFragment]
        let removed: [UUID]
        let idempotencyKey: String?
    }

    enum Outcome {
        case accepted(version: Int)
        case rejected
    }

    private(set) var state: ScopeState
    private(set) var events: [Event] = []
    private(set) var outcomes: [String: Outcome] = [:]

    init(state: ScopeState) {
        self.state = state
    }

    mutating func post(_ fragments: [SyncFragment], key: String) -> Outcome {
        if let outcome = outcomes[key] { return outcome }
        let outcome: Outcome
        switch state.applying(fragments, schema: EngineFixtures.schema, limits: .unlimited) {
        case .accepted(let applied):
            state = applied.state
            events.append(
                Event(
                    version: state.version, fragments: applied.fragments, removed: applied.removed, idempotencyKey: key)
            )
            outcome = .accepted(version: state.version)
        case .rejected:
            outcome = .rejected
        }
        outcomes[key] = outcome
        return outcome
    }
}
