import Foundation
import JetstreamModel
import Logging

/// One JSON object per line on standard error (`--log-format json`), for log shippers:
/// `{"time":…,"level":"info","label":"jetstream","message":"…", metadata…}`.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object = JSONObject()
        object["time"] = .string(
            Date().ISO8601Format(.iso8601.time(includingFractionalSeconds: true).year().month().day()))
        object["level"] = .string(event.level.rawValue)
        object["label"] = .string(label)
        object["message"] = .string(event.message.description)
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for key in merged.keys.sorted() { object[key] = .string(merged[key]!.description) }
        var line = JSONValue.object(object).encoded()
        line.append(10)
        FileHandle.standardError.write(Data(line))
    }
}
