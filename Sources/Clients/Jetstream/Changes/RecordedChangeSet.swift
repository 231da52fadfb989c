import Foundation
import JetstreamModel

/// One batch of recorded local changes: the coalesced fragments to send, and what is needed to revert
/// them (the value each changed key had before the batch).
///
/// ```swift
/// scope.onChanges { changeSet in
///     client.send(changeSet.fragments, atomic: changeSet.isAtomic) { rejected in
///         if rejected { changeSet.revert() }
///     }
/// }
/// ```
public final class RecordedChangeSet {
    /// The fragments in first-touch order, one per object: `add`s carry every synced property,
    /// `change`s the changed keys, all with the values they had when the batch ended. A changed
    /// collection in a `change` is one operations object (`{"remove":[…],"insert":[…],"before":…}`)
    /// from its value before the batch, however many places the batch edited (see
    /// ``JetstreamModel/CollectionOperation/singleOperation(from:to:)``), or the whole array when
    /// that is shorter or the new value holds a value twice.
    public let fragments: [SyncFragment]
    /// Whether the set came from ``Scope/modifyAtomically(_:)`` (all or nothing on the server).
    public let isAtomic: Bool
    /// The fragments as the model core's change set, ready to validate or encode.
    public var changeSet: JetstreamModel.ChangeSet { JetstreamModel.ChangeSet(fragments: fragments) }

    /// Whether ``revert()`` ran.
    public private(set) var isReverted = false

    struct Touch {
        let object: ModelObject
        let key: String
        var originalValue: Any
    }

    weak var scope: Scope?
    var touches: [Touch]

    init(fragments: [SyncFragment], isAtomic: Bool, scope: Scope, touches: [Touch]) {
        self.fragments = fragments
        self.isAtomic = isAtomic
        self.scope = scope
        self.touches = touches
    }

    /// Restores every value the set changed, which also removes the objects it added (their parents'
    /// references go back). The restoration is not recorded as a new change; observers see it.
    ///
    /// ```swift
    /// let changeSet = scope.modify { shape.x = 20 }!
    /// changeSet.revert()  // shape.x is back to its earlier value, no new fragments
    /// ```
    public func revert() {
        revert(keeping: [])
    }

    /// Reverts, leaving alone the (object, key) pairs in `kept` (a later pending set's newer values).
    func revert(keeping kept: Set<TouchKey>) {
        guard !isReverted, let scope else { return }
        isReverted = true
        scope.withoutRecording {
            scope.withDeferredSweep {
                for touch in touches.reversed() where !kept.contains(TouchKey(touch)) {
                    touch.object.slotsByKey[touch.key]?.setAnyValue(touch.originalValue, on: touch.object)
                }
            }
        }
        scope.flush()
    }

    /// The (object, key) pairs the set changed.
    var touchKeys: Set<TouchKey> { Set(touches.map(TouchKey.init)) }
}

/// Identifies one property of one object.
struct TouchKey: Hashable {
    let object: ObjectIdentifier
    let key: String

    init(_ touch: RecordedChangeSet.Touch) {
        object = ObjectIdentifier(touch.object)
        key = touch.key
    }
}
