/// Cancels one observation when called; calling it again does nothing.
public typealias CancelObserver = () -> Void

/// One registered observation on a model object. The observer is held weakly: when it is
/// deallocated the observation ends by itself.
struct Observation {
    enum Kind: Equatable {
        case change(keys: Set<String>?, queued: Bool)
        case treeChange
        case collectionAdd(key: String)
        case collectionRemove(key: String)
        case attach
        case detach
        case addedToParent
        case removedFromParent
    }

    enum Callback {
        case plain(() -> Void)
        case element((Any) -> Void)
        case scope((Scope) -> Void)
        case parent((ModelObject, String) -> Void)
    }

    let id: Int
    weak var observer: AnyObject?
    let kind: Kind
    let callback: Callback

    var isQueuedChange: Bool {
        if case .change(_, queued: true) = kind { return true }
        return false
    }

    func matchesChange(of changedKeys: Set<String>, queued: Bool) -> Bool {
        guard case .change(let keys, let isQueued) = kind, isQueued == queued else { return false }
        guard let keys else { return !changedKeys.isEmpty }
        return !keys.isDisjoint(with: changedKeys)
    }
}
