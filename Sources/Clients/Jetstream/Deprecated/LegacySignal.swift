/// The original's events were `Signal`s (the Signals library): `scope.onChanges.listen(self) { … }`,
/// `client.onSession.listenOnce(self) { … }`. This is that spelling over today's registration
/// functions, so ported code compiles while it moves to them (`scope.onChanges { … }`, ``Client``'s
/// `fetch`). The listener is held weakly, as Signals did: once it is gone its callback stops.
///
/// ```swift
/// scope.onChanges.listen(self) { changeSet in send(changeSet.fragments) }   // deprecated spelling
/// scope.onChanges { changeSet in send(changeSet.fragments) }                // today's
/// ```
@available(
    *, deprecated,
    message: "the original's Signal: register with today's function (scope.onChanges { … }, client.fetch(scope))"
)
public final class LegacySignal<Value> {
    /// Registers a callback with the real event source; returns its cancel function.
    let register: (@escaping (Value) -> Void) -> CancelObserver

    /// A signal whose listeners are registered by `register` (today's registration function).
    public init(register: @escaping (@escaping (Value) -> Void) -> CancelObserver) {
        self.register = register
    }

    /// Calls `callback` for every value while `listener` exists; returns the cancel function.
    @discardableResult
    public func listen(_ listener: AnyObject, _ callback: @escaping (Value) -> Void) -> CancelObserver {
        listen(listener, once: false, callback)
    }

    /// Calls `callback` for the next value only (while `listener` exists); returns the cancel function.
    @discardableResult
    public func listenOnce(_ listener: AnyObject, _ callback: @escaping (Value) -> Void) -> CancelObserver {
        listen(listener, once: true, callback)
    }

    private func listen(_ listener: AnyObject, once: Bool, _ callback: @escaping (Value) -> Void) -> CancelObserver {
        let registration = Registration()
        registration.cancel = register { [weak listener] value in
            guard listener != nil, !registration.isDone else {
                registration.end()
                return
            }
            if once { registration.end() }
            callback(value)
        }
        if registration.isDone { registration.end() }  // a value delivered during registration
        return { registration.end() }
    }

    /// Ties a callback to its cancel function, which only exists once registration returned.
    private final class Registration {
        var cancel: CancelObserver?
        var isDone = false

        func end() {
            isDone = true
            cancel?()
            cancel = nil
        }
    }
}
