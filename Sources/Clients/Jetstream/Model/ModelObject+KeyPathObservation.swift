/// Observation by key path: the compiler checks the property name and, for collections, the
/// element type. Every `ModelObject` subclass has these.
///
/// ```swift
/// shape.observeChange(view, keys: [\Shape.x, \Shape.y]) { view.move() }
/// canvas.observeCollectionAdd(view, key: \Canvas.shapes) { shape in view.add(shape) }
/// ```
public protocol KeyPathObservable: ModelObject {}

extension ModelObject: KeyPathObservable {}

extension KeyPathObservable {
    /// Queued: once per batch of changes to the property at `key`.
    @discardableResult
    public func observeChange<Value>(
        _ observer: AnyObject, key: KeyPath<Self, Value>, _ callback: @escaping () -> Void
    ) -> CancelObserver {
        observeChange(observer, key: propertyKey(key), callback)
    }

    /// Queued: once per batch of changes to any of the properties at `keys`.
    @discardableResult
    public func observeChange(
        _ observer: AnyObject, keys: [PartialKeyPath<Self>], _ callback: @escaping () -> Void
    ) -> CancelObserver {
        observeChange(observer, keys: keys.map(propertyKey), callback)
    }

    /// Immediately, for every change to the property at `key`.
    @discardableResult
    public func observeChangeImmediately<Value>(
        _ observer: AnyObject, key: KeyPath<Self, Value>, _ callback: @escaping () -> Void
    ) -> CancelObserver {
        observeChangeImmediately(observer, key: propertyKey(key), callback)
    }

    /// Immediately, for every change to any of the properties at `keys`.
    @discardableResult
    public func observeChangeImmediately(
        _ observer: AnyObject, keys: [PartialKeyPath<Self>], _ callback: @escaping () -> Void
    ) -> CancelObserver {
        observeChangeImmediately(observer, keys: keys.map(propertyKey), callback)
    }

    /// Immediately, for every element added to the collection at `key`.
    @discardableResult
    public func observeCollectionAdd<Element>(
        _ observer: AnyObject, key: KeyPath<Self, [Element]>, _ callback: @escaping (Element) -> Void
    ) -> CancelObserver {
        observeCollectionAdd(observer, key: propertyKey(key), callback)
    }

    /// Immediately, for every element removed from the collection at `key`.
    @discardableResult
    public func observeCollectionRemove<Element>(
        _ observer: AnyObject, key: KeyPath<Self, [Element]>, _ callback: @escaping (Element) -> Void
    ) -> CancelObserver {
        observeCollectionRemove(observer, key: propertyKey(key), callback)
    }

    /// The name of the `@Synced`/`@Local` property at `keyPath` (read once through its wrapper);
    /// empty for any other key path, which then matches no change.
    public func propertyKey(_ keyPath: PartialKeyPath<Self>) -> String {
        lastAccessedSlot = nil
        _ = self[keyPath: keyPath]
        defer { lastAccessedSlot = nil }
        return lastAccessedSlot?.key ?? ""
    }
}
