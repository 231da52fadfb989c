import JetstreamModel

/// A property of a ``ModelObject`` that is observed, recorded and synced (part of the schema).
///
/// ```swift
/// final class Shape: ModelObject {
///     @Synced var x: Float = 0
///     @Synced(min: 0) var width: Float = 100
///     @Synced(maxLength: 200) var label = ""
///     @Synced var parent: Canvas? = nil
/// }
/// ```
/// The initial value is the property's default (written into the schema entry). Model references and
/// `[Model]` collections make the referenced objects children: they join the scope with their parent.
@propertyWrapper
public struct Synced<Value: PropertyValue> {
    let slot: PropertySlot<Value>

    public init(
        wrappedValue: Value, min: Double? = nil, max: Double? = nil, maxLength: Int? = nil, pattern: String? = nil,
        maxCount: Int? = nil
    ) {
        slot = PropertySlot(
            value: wrappedValue, isSynced: true,
            constraints: PropertyConstraints(
                min: min, max: max, maxLength: maxLength, pattern: pattern, maxCount: maxCount))
    }

    public static subscript<Owner: ModelObject>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, Self>
    ) -> Value {
        get {
            let slot = owner[keyPath: storageKeyPath].slot
            owner.willRead(slot, through: wrappedKeyPath)
            return slot.value
        }
        set { owner.setValue(newValue, in: owner[keyPath: storageKeyPath].slot) }
    }

    @available(*, unavailable, message: "@Synced works only on properties of ModelObject subclasses")
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }
}

/// A property of a ``ModelObject`` that is observed like a synced one but never leaves this process:
/// it is not in the schema, not in fragments, and model objects it refers to do not join the scope.
///
/// ```swift
/// final class Shape: ModelObject {
///     @Local var isSelected = false
/// }
/// ```

@propertyWrapper
public struct Local<Value: PropertyValue> {
    let slot: PropertySlot<Value>

    public init(wrappedValue: Value) {
        slot = PropertySlot(value: wrappedValue, isSynced: false, constraints: PropertyConstraints())
    }

    public static subscript<Owner: ModelObject>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, Self>
    ) -> Value {
        get {
            let slot = owner[keyPath: storageKeyPath].slot
            owner.willRead(slot, through: wrappedKeyPath)
            return slot.value
        }
        set { owner.setValue(newValue, in: owner[keyPath: storageKeyPath].slot) }
    }

    @available(*, unavailable, message: "@Local works only on properties of ModelObject subclasses")
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }
}

/// A property wrapper that holds a ``PropertySlot``: how ``ModelObject`` finds its properties.
protocol PropertySlotWrapper {
    var anySlot: any AnyPropertySlot { get }
}

extension Synced: PropertySlotWrapper {
    var anySlot: any AnyPropertySlot { slot }
}

extension Local: PropertySlotWrapper {
    var anySlot: any AnyPropertySlot { slot }
}
