extension PropertySpec {
    /// The light mode's check of one value (`--light`): only that its JSON type fits the
    /// declaration — a number for Float and Color, a string for String and enums, an array of
    /// strings for `shapes`, null only where the property is nullable. Ranges, enum values,
    /// lengths and reference targets are the default mode's `validate`, not checked here.
    func checkType(_ value: JSONValue) throws(FragmentError) {
        if case .null = value {
            guard nullable else {
                throw FragmentError(.nullNotAllowed, "'\(name)' is not nullable", property: name)
            }
            return
        }
        switch (kind, value) {
        case (.float, .number), (.color, .number), (.string, .string), (.enumeration, .string):
            return
        case (.shapeList, .array(let elements)):
            for (index, element) in elements.enumerated() {
                guard case .string = element else {
                    throw FragmentError(
                        .typeMismatch, "expected a string, got \(element.typeName)", property: "\(name)[\(index)]")
                }
            }
        case (.float, _), (.color, _):
            throw FragmentError(.typeMismatch, "expected a number, got \(value.typeName)", property: name)
        case (.string, _), (.enumeration, _):
            throw FragmentError(.typeMismatch, "expected a string, got \(value.typeName)", property: name)
        case (.shapeList, _):
            throw FragmentError(.typeMismatch, "expected an array of strings, got \(value.typeName)", property: name)
        }
    }
}
