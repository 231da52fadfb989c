import Foundation
import JetstreamJSON
import Yams

extension Schema {
    /// Loads a schema file: `.json` is read as JSON, anything else as YAML.
    ///
    /// ```swift
    /// let schema = try Schema.load(from: URL(fileURLWithPath: "models.yaml"))
    /// ```
    public static func load(from url: URL) throws(SchemaError) -> Schema {
        let file = url.path
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw SchemaError(file: file, message: "cannot read the file: \(error.localizedDescription)")
        }
        if url.pathExtension.lowercased() == "json" {
            return try parse(json: [UInt8](data), file: file)
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw SchemaError(file: file, message: "the file is not UTF-8 text")
        }
        return try parse(yaml: text, file: file)
    }

    /// Parses a schema written in YAML. `file` only labels errors.
    public static func parse(yaml: String, file: String? = nil) throws(SchemaError) -> Schema {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw SchemaError(file: file, message: "invalid YAML: \(error)")
        }
        guard let root else { throw SchemaError(file: file, message: "the file is empty") }
        do {
            return try parse(tree: try YAMLTree.json(from: root, path: "document"))
        } catch {
            throw error.inFile(file)
        }
    }

    /// Parses a schema written in JSON (the same structure as the YAML form).
    public static func parse(json: [UInt8], file: String? = nil) throws(SchemaError) -> Schema {
        let tree: JSONValue
        do {
            tree = try JSONParser.parse(json)
        } catch {
            throw SchemaError(file: file, message: error.description)
        }
        do {
            return try parse(tree: tree)
        } catch {
            throw error.inFile(file)
        }
    }

    /// Parses a schema from its JSON tree (what `GET /v1/schema` serves, see ``jsonValue``).
    public static func parse(tree: JSONValue) throws(SchemaError) -> Schema {
        guard case .object(let document) = tree else {
            throw SchemaError(message: "the document must be a mapping with 'models' and 'scopes'")
        }
        for key in document.keys where key != "models" && key != "scopes" {
            throw SchemaError(message: "unknown top-level key '\(key)' (expected 'models' and 'scopes')")
        }
        guard case .object(let models)? = document["models"] else {
            throw SchemaError(message: "'models' must be a mapping of class names to properties")
        }
        var classes: [ModelClass] = []
        for member in models {
            guard case .object(let properties) = member.value else {
                throw SchemaError(
                    className: member.key, message: "a class must be a mapping of property names to types")
            }
            var definitions: [PropertyDefinition] = []
            var superclassName: String?
            var rules: ClassRules?
            for property in properties {
                // `extends` names the superclass; it is therefore not available as a property name.
                if property.key == "extends" {
                    guard case .string(let name) = property.value else {
                        throw SchemaError(className: member.key, message: "'extends' must name a class")
                    }
                    superclassName = name
                    continue
                }
                // `rules: { write, delete }` are the class's rules; a property named `rules`
                // keeps working as long as its spec is a type or has `type`/`enum`.
                if property.key == "rules", SchemaPropertyParser.isClassRules(property.value) {
                    do {
                        rules = try SchemaPropertyParser.parseClassRules(property.value)
                    } catch {
                        throw SchemaError(className: member.key, message: error.message)
                    }
                    continue
                }
                do {
                    definitions.append(try SchemaPropertyParser.parse(name: property.key, spec: property.value))
                } catch {
                    throw SchemaError(className: member.key, property: property.key, message: error.message)
                }
            }
            classes.append(
                ModelClass(name: member.key, superclassName: superclassName, properties: definitions, rules: rules))
        }
        var rules: [ScopeRule] = []
        if let scopes = document["scopes"] {
            guard case .object(let scopeMembers) = scopes else {
                throw SchemaError(message: "'scopes' must be a mapping of scope name globs to { root: Class }")
            }
            for member in scopeMembers {
                switch member.value {
                case .string(let root):
                    rules.append(ScopeRule(pattern: member.key, rootClassName: root))
                case .object(let rule):
                    guard case .string(let root)? = rule["root"], rule.count == 1 else {
                        throw SchemaError(message: "scope \"\(member.key)\": expected { root: ClassName }")
                    }
                    rules.append(ScopeRule(pattern: member.key, rootClassName: root))
                default:
                    throw SchemaError(message: "scope \"\(member.key)\": expected { root: ClassName }")
                }
            }
        }
        return try Schema(classes: classes, scopes: rules)
    }
}

/// What is wrong with a schema, naming the file, the class and the property where it applies.
///
/// ```swift
/// // models.yaml: class Shape, property width: min must be a number, got a string
/// ```
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String?
    public var className: String?
    public var property: String?
    public var message: String

    public init(file: String? = nil, className: String? = nil, property: String? = nil, message: String) {
        self.file = file
        self.className = className
        self.property = property
        self.message = message
    }

    public var description: String {
        var location: [String] = []
        if let className { location.append("class \(className)") }
        if let property { location.append("property \(property)") }
        let place = location.joined(separator: ", ")
        let prefix = [file, place.isEmpty ? nil : place].compactMap { $0 }.joined(separator: ": ")
        return prefix.isEmpty ? message : "\(prefix): \(message)"
    }

    func inFile(_ file: String?) -> SchemaError {
        var copy = self
        copy.file = copy.file ?? file
        return copy
    }
}

extension String {
    var trimmingSpaces: String {
        String(self.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }

    /// Letters, digits and `_`, not starting with a digit.
    var isIdentifier: Bool {
        guard let first = utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return utf8.allSatisfy {
            ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z")
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
        }
    }
}
