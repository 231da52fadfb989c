import Foundation
import JetstreamModel

/// The storage of one property of one model object, shared by its property wrapper and the framework.
///
/// The wrapper holds the slot, so the framework can find every property of an object through `Mirror`
/// (without the Objective-C runtime) and read or write it without knowing its Swift type.
protocol AnyPropertySlot: AnyObject {
    /// The property's name: the Swift name without the wrapper's underscore, set when the owner is built.
    var key: String { get set }
    /// Whether the property is part of the schema and of sync fragments (`@Synced`) or local (`@Local`).
    var isSynced: Bool { get }
    /// Constraints written into the schema entry.
    var constraints: PropertyConstraints { get }

    var anyValue: Any { get }
    var referencedObjects: [ModelObject] { get }
    var referencedModelType: ModelObject.Type? { get }
    var modelValue: JetstreamModel.Value { get }
    /// The model value of a value of the slot's type (an original value kept for a revert); nil
    /// when `value` has another type.
    func modelValue(of value: Any) -> JetstreamModel.Value?
    var defaultModelValue: JetstreamModel.Value { get }
    var propertyType: PropertyType { get }
    var isNullable: Bool { get }

    /// Sets a value of the slot's type through the owner, so observers and recording run;
    /// returns false when the value has another type.
    @discardableResult
    func setAnyValue(_ value: Any, on owner: ModelObject) -> Bool

    /// Sets a value the model core validated, through the owner; false when it does not decode.
    @discardableResult
    func setModelValue(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?, on owner: ModelObject) -> Bool

    /// Drops every reference to `object` from the owner's value (through the owner, so it is observed).
    func removeReferences(to object: ModelObject, on owner: ModelObject)
}

final class PropertySlot<Value: PropertyValue>: AnyPropertySlot {
    var key = ""
    let isSynced: Bool
    let constraints: PropertyConstraints
    var value: Value
    let defaultValue: Value
    /// The key path of the property's first read, under which the owner's Observation registrar
    /// hears of reads and writes (`ModelObject+Observable.swift`).
    var observedKeyPath: (any ObservedPropertyKeyPath)?

    init(value: Value, isSynced: Bool, constraints: PropertyConstraints) {
        self.value = value
        self.defaultValue = value
        self.isSynced = isSynced
        self.constraints = constraints
    }

    var anyValue: Any { value }
    var referencedObjects: [ModelObject] { value.referencedObjects }
    var referencedModelType: ModelObject.Type? { Value.referencedModelType }
    var modelValue: JetstreamModel.Value { value.modelValue }
    func modelValue(of value: Any) -> JetstreamModel.Value? { (value as? Value)?.modelValue }
    var defaultModelValue: JetstreamModel.Value { defaultValue.modelValue }
    var propertyType: PropertyType { Value.propertyType }
    var isNullable: Bool { Value.isNullable }

    func setAnyValue(_ value: Any, on owner: ModelObject) -> Bool {
        guard let typed = value as? Value else { return false }
        owner.setValue(typed, in: self)
        return true
    }

    func setModelValue(
        _ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?, on owner: ModelObject
    ) -> Bool {
        guard let typed = Value.decode(value, resolve: resolve) else { return false }
        owner.setValue(typed, in: self)
        return true
    }

    func removeReferences(to object: ModelObject, on owner: ModelObject) {
        if let kept = value.removingReferences(to: object) {
            owner.setValue(kept, in: self)
        }
    }
}
