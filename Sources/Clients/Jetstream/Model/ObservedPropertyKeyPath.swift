import Observation

/// The key path of a `@Synced` or `@Local` property as its wrapper received it (rooted at the class
/// that declares the property), kept by the property's slot.
///
/// The Observation registrar matches a write to a read by key path, typed by its root. The wrapper's
/// getter has that key path, but the framework's own writes (remote fragments, reverts, `detach()`)
/// reach a property through its slot only: the slot keeps the key path of the first read, and the
/// conformance below restores its root type to call the registrar. A property nobody has read
/// has no key path yet, and no observation tracking can be waiting for it either.
protocol ObservedPropertyKeyPath: AnyKeyPath {
    /// Tells the registrar of `object` that the property was read (it joins the current
    /// `withObservationTracking` scope, if any).
    func access(on object: ModelObject)

    /// Runs `store` between the registrar's will-set and did-set notifications for the property.
    func withMutation(on object: ModelObject, _ store: () -> Void)
}

extension ReferenceWritableKeyPath: ObservedPropertyKeyPath where Root: ModelObject {
    // `object` is always the owner of the slot that keeps this key path, and the wrapper formed the
    // key path from the class declaring the property, so the owner is a `Root`.

    func access(on object: ModelObject) {
        object.observationRegistrar.access(unsafeDowncast(object, to: Root.self), keyPath: self)
    }

    func withMutation(on object: ModelObject, _ store: () -> Void) {
        object.observationRegistrar.withMutation(of: unsafeDowncast(object, to: Root.self), keyPath: self, store)
    }
}
