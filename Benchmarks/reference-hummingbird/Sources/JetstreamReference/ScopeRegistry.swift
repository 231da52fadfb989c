import Synchronization

/// The scopes by name. Lookups are frequent and short, so a mutex guards the dictionary; each
/// scope's own state lives in its actor.
final class ScopeRegistry: Sendable {
    private let scopes = Mutex<[String: Scope]>([:])
    let limits: ScopeLimits

    init(limits: ScopeLimits) {
        self.limits = limits
    }

    func scope(named name: String) -> Scope? {
        scopes.withLock { $0[name] }
    }

    func allScopes() -> [Scope] {
        scopes.withLock { Array($0.values) }
    }

    /// Adds a scope at version 0 holding `root`; nil when the name is taken.
    func create(name: String, root: ModelObject) -> Scope? {
        scopes.withLock { scopes in
            guard scopes[name] == nil else { return nil }
            let scope = Scope(state: ScopeState(name: name, root: root), limits: limits)
            scopes[name] = scope
            return scope
        }
    }
}
