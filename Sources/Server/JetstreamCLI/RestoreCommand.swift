import ArgumentParser
import Foundation
import GatewayServer
import Store

/// `jetstream restore FILE --data-dir D`: a backup made by `jetstream backup` becomes the store of
/// data directory D, which `jetstream serve --data-dir D` then serves at the versions the backup
/// printed (`SQLiteBackup.restore`, docs/backups.md).
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make FILE, a backup of `jetstream backup`, the store of a data directory.",
        discussion: """
            Creates the data directory if needed and refuses one that holds a store already, or a \
            WAL or shared-memory file of one (remove them, or choose an empty directory), and one \
            a running gateway holds. The file is checked, copied, fsynced and renamed into place: \
            the directory never holds half a store. Prints `NAME VERSION` per scope and a summary \
            line, or with --json one object {"file", "scopes": [{"name", "version"}]}.
            """)

    @Option(help: "Data directory to restore into (as given to `jetstream serve` afterwards). [JETSTREAM_DATA_DIR]")
    var dataDir = EnvironmentDefault.value("JETSTREAM_DATA_DIR", "./jetstream-data")
    @Flag(help: "Print one JSON object instead of lines.") var json = false
    @Argument(help: "The backup file.") var file: String

    func run() throws {
        guard FileManager.default.fileExists(atPath: file) else {
            BackupCommand.fail("no backup file at \(file)", command: "restore")
        }
        do {
            try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        } catch {
            BackupCommand.fail("cannot create the data directory \(dataDir): \(error)", command: "restore")
        }
        let storePath = GatewayServerConfiguration(dataDirectory: dataDir).storePath
        do throws(SQLiteBackupError) {
            let restored = try SQLiteBackup.restore(file, toStore: storePath)
            BackupCommand.report(
                restored, json: json,
                summary: "restored \(restored.scopes.count) scopes from \(file) into \(storePath)")
        } catch .notAStore(let path, let message) {
            BackupCommand.fail(
                "\(path) is not a Jetstream store: \(message); nothing was restored", command: "restore")
        } catch {
            BackupCommand.fail("\(error); nothing was restored", command: "restore")
        }
    }
}
