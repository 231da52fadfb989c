import Foundation
import JetstreamModel

/// The storage of one property of one model object, shared by its property wrapper and the framework.
///
/// The wrapper holds the slot, so the framework can find every property of an object through `Mirror`
/// (without the Objective-C runtime) and read or write it without knowing its Swift type.
class AnyPropertySlot {
    /// The property's name: the Swift name without the wrapper's underscore, set when the owner is built.
    var key: String = ""
    /// Whether the property is part of the schema and of sync fragments (`@Synced`) or local (`@Local`).
    let isSynced: Bool
    /// Constraints written into the schema entry.
    let constraints: PropertyConstraints

    init(isSynced: Bool, constraints: PropertyConstraints) {
        self.isSynced = isSynced
        self.constraints = constraints
    }

    var anyValue: Any { fatalError("abstract") }
    var anyDefaultValue: Any { fatalError("abstract") }
    var referencedObjects: [ModelObject] { [] }
    var referencedModelType: ModelObject.Type? { nil }

    /// Sets a value of the slot's type through the owner, so observers and recording run;
    /// returns false when the value has another type.
    @discardableResult
    func setAnyValue(_ value: Any, on owner: ModelObject) -> Bool { false }

    var modelValue: JetstreamModel.Value { .null }
    var defaultModelValue: JetstreamModel.Value { .null }
    var propertyType: PropertyType { .bool }
    var isNullable: Bool { false }

    /// Sets a value the model core validated, through the owner; false when it does not decode.
    @discardableResult
    func setModelValue(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?, on owner: ModelObject) -> Bool {
        false
    }

    /// Drops every reference to `object` from the owner's value (through the owner, so it is observed).
    func removeReferences(to object: ModelObject, on owner: ModelObject) {}
}

final class PropertySlot<Value: PropertyValue>: AnyPropertySlot {
    var value: Value
    let defaultValue: Value

    init(value: Value, isSynced: Bool, constraints: PropertyConstraints) {
        self.value = value
        self.defaultValue = value
        super.init(isSynced: isSynced, constraints: constraints)
    }

    override var anyValue: Any { value }
    override var anyDefaultValue: Any { defaultValue }
    override var referencedObjects: [ModelObject] { value.referencedObjects }
    override var referencedModelType: ModelObject.Type? { Value.referencedModelType }

    override func setAnyValue(_ value: Any, on owner: ModelObject) -> Bool {
        guard let typed = value as? Value else { return false }
        owner.setValue(typed, in: self)
        return true
    }

    override var modelValue: JetstreamModel.Value { value.modelValue }
    override var defaultModelValue: JetstreamModel.Value { defaultValue.modelValue }
    override var propertyType: PropertyType { Value.propertyType }
    override var isNullable: Bool { Value.isNullable }

    override func setModelValue(
        _ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?, on owner: ModelObject
    ) -> Bool {
        guard let typed = Value.decode(value, resolve: resolve) else { return false }
        owner.setValue(typed, in: self)
        return true
    }

    override func removeReferences(to object: ModelObject, on owner: ModelObject) {
        if let kept = value.removingReferences(to: object) {
            owner.setValue(kept, in: self)
        }
    }
}
