import JetstreamModel

/// Who made a change set and why, recorded with it: in its payload, hence in its `changeset`
/// event, in history pages and in the answer to its writer, next to `"at"` (the server's time
/// when it was accepted).
///
/// ```swift
/// engine.submit(changeSet, to: handle, origin: ChangeOrigin(subject: grant.subject)) { outcome in … }
/// ```
public struct ChangeOrigin: Sendable, Hashable {
    /// The authenticated subject that sent it (`null` when anonymous).
    public var subject: String?
    /// The version a restore brought the scope back to.
    public var restoredFrom: Int?
    /// The change set a revert undid.
    public var revertOf: Int?

    public init(subject: String? = nil, restoredFrom: Int? = nil, revertOf: Int? = nil) {
        self.subject = subject
        self.restoredFrom = restoredFrom
        self.revertOf = revertOf
    }

    /// Writes `,"at":"…","subject":…` and, when set, `,"restoredFrom":N` / `,"revertOf":V`.
    func write(at time: String, to writer: inout JSONWriter) {
        writer.writeRaw(#","at":"#)
        writer.write(string: time)
        writer.writeRaw(#","subject":"#)
        if let subject { writer.write(string: subject) } else { writer.writeRaw("null") }
        if let restoredFrom { writer.writeRaw(#","restoredFrom":\#(restoredFrom)"#) }
        if let revertOf { writer.writeRaw(#","revertOf":\#(revertOf)"#) }
    }
}

/// RFC 3339 UTC times with milliseconds (`2026-11-28T07:41:09.123Z`), written without Foundation's
/// formatters: one is made per accepted change set.
enum ChangeTime {
    static func rfc3339(millisecondsSince1970 milliseconds: Int64) -> String {
        let (days, dayMilliseconds) = milliseconds.quotientAndRemainderFlooring(dividingBy: 86_400_000)
        let (year, month, day) = civilDate(daysSince1970: days)
        let seconds = dayMilliseconds / 1000
        var text = ""
        text.reserveCapacity(24)
        text += pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
        text += pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
        text += "." + pad(dayMilliseconds % 1000, 3) + "Z"
        return text
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
    private static func civilDate(daysSince1970 days: Int64) -> (Int64, Int64, Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    fileprivate func quotientAndRemainderFlooring(dividingBy divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
