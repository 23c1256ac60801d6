import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Why a suite file cannot serve as the suite's domain.
enum SuiteFileProblem: Error, Equatable, Sendable {
  static let folder = "a folder"

  /// The plist is a symbolic link: never followed, never written through.
  case symbolicLink
  /// A folder, FIFO, socket or device stands where the plist should be.
  case notAFile(String)
  /// Larger than ``SuiteFile/maximumSize``.
  case tooLarge(Int64)
  /// The file could not be opened or read (the reason from the system).
  case cannotRead(String)
  case empty
  case notPropertyList
  /// A binary plist the strict reader refuses: malformed, nested too deep, or expanding past its budget. corelibs
  /// could crash or hang on it.
  case malformedBinary
  /// A property list whose root is not a dictionary (the kind it is).
  case notDictionary(String)

  var reason: String {
    switch self {
    case .symbolicLink: "is a symbolic link; the library neither follows nor replaces it"
    case .notAFile(let kind): "is \(kind), not a file"
    case .tooLarge(let size):
      "is \(size) bytes, more than the \(SuiteFile.maximumSize >> 20) MiB a preferences file may have"
    case .cannotRead(let reason): "cannot be read: \(reason)"
    case .empty: "is empty"
    case .notPropertyList: "is not a property list"
    case .malformedBinary: "is a binary property list that is malformed, too deep or too large when expanded"
    case .notDictionary(let kind):
      "holds \(kind.first.map { "AEIOU".contains($0) } == true ? "an" : "a") \(kind), not a dictionary"
    }
  }

  /// The content may be a write in progress by a writer that takes no lock.
  var mayBeAWriteInProgress: Bool {
    switch self {
    case .empty, .notPropertyList, .malformedBinary, .notDictionary: true
    default: false
    }
  }

  /// The library leaves the path alone: it is no file of ours to read, back up or replace.
  var isLeftAlone: Bool {
    switch self {
    case .symbolicLink, .notAFile, .cannotRead: true
    default: false
    }
  }

  /// corelibs could crash or hang reading it, so it must be out of the way before corelibs does.
  var endangersReaders: Bool {
    switch self {
    case .malformedBinary, .tooLarge: true
    default: false
    }
  }
}

/// Why a save failed: the message says which operation on which path, and the system's reason.
struct SaveFailure: Error, Sendable {
  var reason: String

  init(_ reason: String) {
    self.reason = reason
  }

  /// A failure of a system call, described with `errno`.
  init(operation: String) {
    let code = errno
    reason = operation + ": " + String(cString: strerror(code))
  }
}

extension PropertyListValue {
  /// What the strict binary reader found, when it is property-list data (no null, no archive reference).
  init?(archiveNode node: ArchiveNode) {
    switch node {
    case .null, .reference: return nil
    case .bool(let value): self = .bool(value)
    case .integer(let value): self = .integer(value)
    case .real(let value): self = .real(value)
    case .date(let value): self = .date(Date(timeIntervalSinceReferenceDate: value))
    case .string(let value): self = .string(value)
    case .data(let value): self = .data(value)
    case .array(let items):
      var values: [PropertyListValue] = []
      values.reserveCapacity(items.count)
      for item in items {
        guard let value = PropertyListValue(archiveNode: item) else { return nil }
        values.append(value)
      }
      self = .array(values)
    case .dictionary(let entries):
      var values: [PropertyListKey: PropertyListValue] = [:]
      values.reserveCapacity(entries.count)
      for (key, item) in entries {
        guard let value = PropertyListValue(archiveNode: item) else { return nil }
        values[key] = value
      }
      self = .dictionary(values)
    }
  }
}
