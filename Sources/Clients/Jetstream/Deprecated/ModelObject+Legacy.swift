/// The original `ModelObject`'s observer spellings that differ from today's.
extension ModelObject {
    /// The original README's spelling of ``removeObservers(_:)``.
    @available(*, deprecated, renamed: "removeObservers(_:)")
    public func removeObserver(_ observer: AnyObject) {
        removeObservers(observer)
    }

    /// The original README's misspelling of ``observeDetach(_:_:)``.
    @available(*, deprecated, renamed: "observeDetach(_:_:)")
    @discardableResult
    public func observeDettach(_ observer: AnyObject, _ callback: @escaping (Scope) -> Void) -> CancelObserver {
        observeDetach(observer, callback)
    }

    /// The original README's `shape.observeDetach(self) { … }`, whose closure takes no scope.
    @available(*, deprecated, message: "use observeDetach(_:_:) { scope in … } (or { _ in … })")
    @discardableResult
    public func observeDetach(_ observer: AnyObject, _ callback: @escaping () -> Void) -> CancelObserver {
        observeDetach(observer) { _ in callback() }
    }

    /// `observeAttach(self) { … }` with a closure that takes no scope, like the README's detach.
    @available(*, deprecated, message: "use observeAttach(_:_:) { scope in … } (or { _ in … })")
    @discardableResult
    public func observeAttach(_ observer: AnyObject, _ callback: @escaping () -> Void) -> CancelObserver {
        observeAttach(observer) { _ in callback() }
    }
}
