import JetstreamJSON

extension ModelClass {
    /// This class's schema entry: `extends` when it has a superclass, then the properties it
    /// declares, in the long form and declaration order.
    public var jsonValue: JSONValue {
        var properties = JSONObject()
        if let superclassName { properties.appendUnchecked(key: "extends", value: .string(superclassName)) }
        for property in ownProperties {
            properties.appendUnchecked(key: property.name, value: property.jsonValue)
        }
        return .object(properties)
    }
}
