import Observation

/// Swift's Observation framework (what SwiftUI tracks): reading a `@Synced` or `@Local` property
/// inside `withObservationTracking` (or a SwiftUI view's body) subscribes to that property of
/// that object; every write that changes it notifies, whoever makes it — the app, a remote
/// fragment applied by the scope, a revert, `detach()`.
///
/// ```swift
/// withObservationTracking {
///     _ = shape.label
/// } onChange: {
///     print("label will change")  // before the new value is stored, as with @Observable
/// }
/// ```
/// The registrar calls `onChange` synchronously in the writer's isolation domain, the object's own.
extension ModelObject: Observable {
    /// The wrapper's read of `slot`: remembers the slot for ``KeyPathObservable/propertyKey(_:)`` and
    /// reports the read to the registrar, under the key path the slot keeps for writes.
    func willRead<Owner: ModelObject, Value>(
        _ slot: PropertySlot<Value>, through keyPath: ReferenceWritableKeyPath<Owner, Value>
    ) {
        lastAccessedSlot = slot
        let observedKeyPath: any ObservedPropertyKeyPath
        if let known = slot.observedKeyPath {
            observedKeyPath = known
        } else {
            observedKeyPath = keyPath
            slot.observedKeyPath = keyPath
        }
        observedKeyPath.access(on: self)
    }

    /// Stores `newValue` into `slot`, announced to the registrar when the property was ever read.
    func store<Value>(_ newValue: Value, in slot: PropertySlot<Value>) {
        guard let observedKeyPath = slot.observedKeyPath else {
            slot.value = newValue
            return
        }
        observedKeyPath.withMutation(on: self) { slot.value = newValue }
    }
}
