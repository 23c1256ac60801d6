/// One operation of a plan line (``HistoryPlan``).
enum WorkerOperation {
  case pause(microseconds: Int)
  case open(String)
  /// Drops the thread's store of the suite (its observers stay: their tokens keep their hub).
  case release(String)
  case write(String, key: String)
  case remove(String, key: String)
  case read(String, key: String)
  case update(String, key: String)
  case edit(String, keys: [String])
  case flush(String)
  case refresh(String)
  case observe(String, key: String)
  case cancel(String, key: String)
  /// An observer after which the thread does nothing more (``HistoryPlan/make(seed:)``).
  case quiet(String, key: String)
  /// Opens a side target's store, writes it and observes it, or, when the thread holds it, cancels and releases it.
  case busy(String)
  case toolWrite(String, key: String)
  case toolDelete(String)
  case toolImport(String, keys: [String])
  case unlink(String)
  case plain(key: String)
  /// A write of a checked suite's key through a plain `UserDefaults` instance of this process (in a history over file
  /// stores, which have none: through another store of the file).
  case plainSet(String, key: String)
  /// A removal, likewise.
  case plainRemove(String, key: String)

  init?(_ line: String) {
    let words = line.split(separator: " ").map(String.init)
    guard let name = words.first else { return nil }
    let suite = words.count > 1 ? words[1] : ""
    let keys = Array(words.dropFirst(2))
    let key = keys.first ?? ""
    switch name {
    case "pause": self = .pause(microseconds: Int(suite) ?? 0)
    case "open": self = .open(suite)
    case "release": self = .release(suite)
    case "write": self = .write(suite, key: key)
    case "remove": self = .remove(suite, key: key)
    case "read": self = .read(suite, key: key)
    case "update": self = .update(suite, key: key)
    case "edit": self = .edit(suite, keys: keys)
    case "flush": self = .flush(suite)
    case "refresh": self = .refresh(suite)
    case "observe": self = .observe(suite, key: key)
    case "cancel": self = .cancel(suite, key: key)
    case "quiet": self = .quiet(suite, key: key)
    case "busy": self = .busy(suite)
    case "toolwrite": self = .toolWrite(suite, key: key)
    case "tooldelete": self = .toolDelete(suite)
    case "toolimport": self = .toolImport(suite, keys: keys)
    case "unlink": self = .unlink(suite)
    case "plain": self = .plain(key: suite)
    case "pset": self = .plainSet(suite, key: key)
    case "premove": self = .plainRemove(suite, key: key)
    default: return nil
    }
  }

  /// The name logged, the suite label, the keys, and how many new values it writes (one per key) or whether it
  /// removes.
  var logged: (name: String, suite: String, keys: [String], writes: Bool, removes: Bool) {
    switch self {
    case .pause: ("pause", "", [], false, false)
    case .open(let suite): ("open", suite, [], false, false)
    case .release(let suite): ("release", suite, [], false, false)
    case .write(let suite, let key): ("write", suite, [key], true, false)
    case .remove(let suite, let key): ("remove", suite, [key], false, true)
    case .read(let suite, let key): ("read", suite, [key], false, false)
    case .update(let suite, let key): ("update", suite, [key], true, false)
    case .edit(let suite, let keys): ("edit", suite, keys, true, false)
    case .flush(let suite): ("flush", suite, [], false, false)
    case .refresh(let suite): ("refresh", suite, [], false, false)
    case .observe(let suite, let key): ("observe", suite, [key], false, false)
    case .cancel(let suite, let key): ("cancel", suite, [key], false, false)
    case .quiet(let suite, let key): ("quiet", suite, [key], false, false)
    case .busy(let suite): ("busy", suite, [], false, false)
    case .toolWrite(let suite, let key): ("toolwrite", suite, [key], true, false)
    case .toolDelete(let suite): ("tooldelete", suite, [], false, false)
    case .toolImport(let suite, let keys): ("toolimport", suite, keys, true, false)
    case .unlink(let suite): ("unlink", suite, [], false, false)
    case .plain(let key): ("plain", "P", [key], true, false)
    case .plainSet(let suite, let key): ("pset", suite, [key], true, false)
    case .plainRemove(let suite, let key): ("premove", suite, [key], false, true)
    }
  }
}
