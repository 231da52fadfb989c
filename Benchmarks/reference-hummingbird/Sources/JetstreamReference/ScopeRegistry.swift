import Synchronization

/// The scopes by name. Lookups are frequent and short, so a mutex guards the dictionary; each
/// scope guards its own state (an actor, or one mutex in light mode).
final class ScopeRegistry: Sendable {
    private let scopes = Mutex<[String: any ScopeStore]>([:])
    let limits: ScopeLimits
    /// `--light`: new scopes are `LightScope`s (light checks, one mutex) instead of `Scope` actors.
    let light: Bool

    init(limits: ScopeLimits, light: Bool = false) {
        self.limits = limits
        self.light = light
    }

    func scope(named name: String) -> (any ScopeStore)? {
        scopes.withLock { $0[name] }
    }

    func allScopes() -> [any ScopeStore] {
        scopes.withLock { Array($0.values) }
    }

    /// Adds a scope at version 0 holding `root`; nil when the name is taken.
    func create(name: String, root: ModelObject) -> (any ScopeStore)? {
        scopes.withLock { scopes in
            guard scopes[name] == nil else { return nil }
            let state = ScopeState(name: name, root: root)
            let scope: any ScopeStore =
                light ? LightScope(state: state, limits: limits) : Scope(state: state, limits: limits)
            scopes[name] = scope
            return scope
        }
    }
}
