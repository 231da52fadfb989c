extension ModelObject {
    /// Calls `callback` once per batch of changes to any property (queued: delivered when the scope
    /// flushes, see ``Scope/flush()``).
    ///
    /// ```swift
    /// shape.observeChange(view) { [unowned view] in view.redraw() }
    /// ```
    @discardableResult
    public func observeChange(_ observer: AnyObject, _ callback: @escaping () -> Void) -> CancelObserver {
        addObservation(observer, .change(keys: nil, queued: true), .plain(callback))
    }

    /// Calls `callback` once per batch of changes to the property `key` (queued).
    @discardableResult
    public func observeChange(
        _ observer: AnyObject, key: String, _ callback: @escaping () -> Void
    )
        -> CancelObserver
    {
        addObservation(observer, .change(keys: [key], queued: true), .plain(callback))
    }

    /// Calls `callback` once per batch of changes to any of `keys` (queued).
    @discardableResult
    public func observeChange(
        _ observer: AnyObject, keys: [String], _ callback: @escaping () -> Void
    )
        -> CancelObserver
    {
        addObservation(observer, .change(keys: Set(keys), queued: true), .plain(callback))
    }

    /// Calls `callback` at once for every change to any property.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, _ callback: @escaping () -> Void) -> CancelObserver {
        addObservation(observer, .change(keys: nil, queued: false), .plain(callback))
    }

    /// Calls `callback` at once for every change to the property `key`.
    @discardableResult
    public func observeChangeImmediately(
        _ observer: AnyObject, key: String, _ callback: @escaping () -> Void
    )
        -> CancelObserver
    {
        addObservation(observer, .change(keys: [key], queued: false), .plain(callback))
    }

    /// Calls `callback` at once for every change to any of `keys`.
    @discardableResult
    public func observeChangeImmediately(
        _ observer: AnyObject, keys: [String], _ callback: @escaping () -> Void
    )
        -> CancelObserver
    {
        addObservation(observer, .change(keys: Set(keys), queued: false), .plain(callback))
    }

    /// Calls `callback` at once for every element added to the collection property `key`
    /// (elements of another type than `Element` are skipped).
    ///
    /// ```swift
    /// canvas.observeCollectionAdd(view, key: "shapes") { (shape: Shape) in view.add(shape) }
    /// ```
    @discardableResult
    public func observeCollectionAdd<Element>(
        _ observer: AnyObject, key: String, _ callback: @escaping (Element) -> Void
    ) -> CancelObserver {
        addObservation(observer, .collectionAdd(key: key), .element { ($0 as? Element).map(callback) })
    }

    /// Calls `callback` at once for every element removed from the collection property `key`.
    @discardableResult
    public func observeCollectionRemove<Element>(
        _ observer: AnyObject, key: String, _ callback: @escaping (Element) -> Void
    ) -> CancelObserver {
        addObservation(observer, .collectionRemove(key: key), .element { ($0 as? Element).map(callback) })
    }

    /// Calls `callback` once per batch in which this object or any descendant changed (queued).
    @discardableResult
    public func observeTreeChange(_ observer: AnyObject, _ callback: @escaping () -> Void) -> CancelObserver {
        addObservation(observer, .treeChange, .plain(callback))
    }

    /// Calls `callback` when the object joins a scope (also when it joins as part of a subtree).
    @discardableResult
    public func observeAttach(_ observer: AnyObject, _ callback: @escaping (Scope) -> Void) -> CancelObserver {
        addObservation(observer, .attach, .scope(callback))
    }

    /// Calls `callback` when the object leaves its scope (it is no longer reachable from the root).
    @discardableResult
    public func observeDetach(_ observer: AnyObject, _ callback: @escaping (Scope) -> Void) -> CancelObserver {
        addObservation(observer, .detach, .scope(callback))
    }

    /// Calls `callback` with `(parent, key)` when a synced property of `parent` starts referring to this object.
    @discardableResult
    public func observeAddedToParent(
        _ observer: AnyObject, _ callback: @escaping (ModelObject, String) -> Void
    ) -> CancelObserver {
        addObservation(observer, .addedToParent, .parent(callback))
    }

    /// Calls `callback` with `(parent, key)` when a synced property of `parent` stops referring to this object.
    @discardableResult
    public func observeRemovedFromParent(
        _ observer: AnyObject, _ callback: @escaping (ModelObject, String) -> Void
    ) -> CancelObserver {
        addObservation(observer, .removedFromParent, .parent(callback))
    }

    /// Ends every observation of this object registered by `observer`.
    public func removeObservers(_ observer: AnyObject) {
        observations.removeAll { $0.observer == nil || $0.observer === observer }
    }

    /// The number of live observations (those whose observer still exists).
    public var observationCount: Int {
        observations.removeAll { $0.observer == nil }
        return observations.count
    }

    private func addObservation(
        _ observer: AnyObject, _ kind: Observation.Kind, _ callback: Observation.Callback
    )
        -> CancelObserver
    {
        observations.removeAll { $0.observer == nil }
        nextObservationID += 1
        let id = nextObservationID
        observations.append(Observation(id: id, observer: observer, kind: kind, callback: callback))
        return { [weak self] in self?.observations.removeAll { $0.id == id } }
    }
}
