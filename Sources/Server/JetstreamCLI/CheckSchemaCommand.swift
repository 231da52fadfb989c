import ArgumentParser
import Foundation
import GatewayServer
import JetstreamModel
import Logging
import ScopeEngine

/// `jetstream check-schema FILE [--data-dir D | --database-url URL]`: validates a schema file the
/// way `serve --schema` loads it and, given a store, checks every stored scope against it in one
/// pass — the dry run before a deploy. Exit status: 0 the schema (and the data) fit, 1 some stored
/// value does not, 2 the file or the store cannot be read.
struct CheckSchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-schema",
        abstract: "Validate a model schema file (YAML or JSON), and check the stored data against it.",
        discussion: """
            With --data-dir (the embedded store; not while a gateway serves it: check a `jetstream \
            backup` of it) or --database-url, every object of every stored scope is checked against \
            FILE as `serve --schema FILE` would load it, and every one it refuses is listed: scope, \
            object, class, property, stored value and why. Exit status 0 when everything fits \
            (after `onInvalid` fixes), 1 when something does not, 2 when FILE or the store cannot \
            be read.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Argument(help: "The schema file.") var file: String
    @Option(help: "Data directory of an embedded store to check against the schema.") var dataDir: String?
    @Option(name: .customLong("database-url"), help: "PostgreSQL store to check against the schema.")
    var databaseURL: String?
    @Option(help: "text: one line per problem and a summary; json: one object.") var format: Format = .text

    func validate() throws {
        if dataDir != nil && databaseURL != nil {
            throw ValidationError("give --data-dir or --database-url, not both")
        }
    }

    func run() async throws {
        let schema: Schema
        do {
            schema = try Schema.load(from: URL(fileURLWithPath: file))
        } catch {
            Self.fail("\(error)")
        }
        guard dataDir != nil || databaseURL != nil else {
            print("\(file): ok — \(schema.classes.count) classes, \(schema.scopes.count) scope rules")
            return
        }
        var configuration = GatewayServerConfiguration(dataDirectory: dataDir ?? ".")
        configuration.databaseURL = databaseURL
        var logger = Logger(label: "jetstream.check-schema")
        logger.logLevel = .error
        let report: SchemaFitReport
        do {
            report = try await GatewayServer.checkStoredData(configuration, schema: schema, logger: logger)
        } catch {
            Self.fail("cannot read the store: \(error)")
        }
        switch format {
        case .json:
            print(report.jsonValue.encodedString())
        case .text:
            for line in report.lines(schemaName: file) { print(line) }
            if report.fits {
                print(
                    "\(file) fits the stored data: \(report.scopes) scopes, \(report.objects) objects "
                        + "(\(report.fixedValues) values fixed by onInvalid)")
            }
        }
        if !report.fits { throw ExitCode(1) }
    }

    /// Writes `jetstream check-schema: message` to stderr and exits with status 2.
    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("jetstream check-schema: \(message)\n".utf8))
        Foundation.exit(2)
    }
}
