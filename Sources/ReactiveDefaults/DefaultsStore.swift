public import Foundation
import Synchronization

/// Typed, observable access to one `UserDefaults` suite.
///
/// ```swift
/// let store = DefaultsStore.standard
/// store[.volume] = 0.8                 // writes, and tells the observers of "volume" only
/// let volume = store[.volume]          // typed read: never throws, never crashes
/// let token = store.property(.volume).observe { print($0) }
/// ```
///
/// Every store over the same suite in a process shares one change hub: a write through any of them reaches
/// the observers of that key in all of them. Stores are cheap to make and safe to use from any thread.
public final class DefaultsStore: Sendable {
  /// The store over `UserDefaults.standard`.
  public static let standard = DefaultsStore(UserDefaults.standard)

  /// The `UserDefaults` instance this store reads and writes.
  ///
  /// An in-memory store (``inMemory(_:)``) and a file store (``init(fileURL:)``) have none: this is then an instance
  /// of an unused suite that the store never reads or writes.
  public var userDefaults: UserDefaults { hub.storage.userDefaults ?? Self.detachedDefaults.instance }

  private static let detachedDefaults = SendableDefaults(
    instance: UserDefaults(suiteName: "ReactiveDefaults.inMemory")!)

  /// The suite's name: the one given to ``init(suiteName:)``, or the suite of the instance given to ``init(_:)``
  /// when Foundation lets the library tell it (on Linux). `nil` for the standard suite, in-memory stores and file
  /// stores.
  public var suiteName: String? { hub.suiteName }

  let hub: ChangeHub
  private let issueHandlerStorage = Locked<(@Sendable (DefaultsError) -> Void)?>(nil)

  /// Creates a store over a named suite, or returns `nil` for a name that could address a file outside the
  /// preferences folder or forge terminal output.
  ///
  /// - Parameter suiteName: The suite's name, such as `"group.app"`. Names ``isValidSuiteName(_:)`` rejects are
  ///   refused, as are names Foundation refuses. On Linux, so is a suite whose plist is a FIFO, a socket or a device:
  ///   Foundation would block reading it (a FIFO with no writer), and the library never renames what is not its file.
  public init?(suiteName: String) {
    guard Self.isValidSuiteName(suiteName), SuiteFile.specialFile(ofSuite: suiteName) == nil,
      let hub = HubRegistry.hub(suiteName: suiteName)
    else { return nil }
    self.hub = hub
    listenForFileIssues()
  }

  /// Creates a store over a property-list file at any path, with no `UserDefaults` in the way; `nil` for a URL that
  /// is not a file URL, or names a folder.
  ///
  /// The store has every behaviour of a suite store (typed keys, observers, streams, ``DefaultsProperty/bind(to:)``,
  /// ``edit(_:)``, migrations, ``flush()`` and ``save()``), and keeps its values in memory of its own: a read is a
  /// dictionary lookup, and a save replaces the file atomically (a new file beside it, flushed, renamed over it), under
  /// an advisory lock on `<file>.lock`, merged with what other processes saved meanwhile. Other processes' saves
  /// reach reads and observers as they do for a suite. The file is an XML property list, as a suite's plist: other
  /// tools read it. It is not created until something is written; its folder is created then if missing.
  ///
  /// ```swift
  /// let url = URL(fileURLWithPath: "settings.plist")
  /// let settings = DefaultsStore(fileURL: url)!
  /// settings[.volume] = 0.8
  /// ```
  ///
  /// Two stores over one file in a process share their observers, however the path is spelled (`..`, symbolic links
  /// in the folder path).
  ///
  /// - Parameter fileURL: The file's URL.
  public init?(fileURL: URL) {
    guard fileURL.isFileURL, !fileURL.hasDirectoryPath, !fileURL.path.isEmpty else { return nil }
    let name = fileURL.lastPathComponent
    guard name != "/", name != ".", name != ".." else { return nil }
    self.hub = HubRegistry.hub(fileAt: fileURL.path)
    listenForFileIssues()
  }

  /// Creates a store over an existing `UserDefaults` instance.
  ///
  /// - Parameter userDefaults: The instance to read and write. Stores over the same instance share their
  ///   observers.
  public init(_ userDefaults: UserDefaults) {
    self.hub = HubRegistry.hub(for: userDefaults)
    listenForFileIssues()
  }

  /// A store over the given hub (in-memory stores; tests).
  init(hub: ChangeHub) {
    self.hub = hub
    listenForFileIssues()
  }

  /// A new, isolated store that keeps its values in memory: it never reads or writes `UserDefaults` or disk.
  ///
  /// It behaves as every other store does (typed reads, reported mismatches, observers, ``DefaultsProperty/values``,
  /// ``DefaultsProperty/bind(to:)``, Observation, ``reset(_:)-3z74s``); ``flush()``, ``save()`` and ``refresh()`` have
  /// nothing to do. Use it in unit tests and previews, one per test:
  ///
  /// ```swift
  /// @Test func muteSilencesThePlayer() {
  ///   let settings = DefaultsStore.inMemory()
  ///   settings[.volume] = 0.8
  ///   let player = Player(settings: settings)
  ///   player.mute()
  ///   #expect(settings[.volume] == 0)
  /// }
  /// ```
  ///
  /// - Parameter values: The values it starts with, by key name (a string literal, or ``PropertyListKey``), in their
  ///   stored form.
  /// - Returns: A new store; each call makes another, empty unless given values.
  public static func inMemory(_ values: [PropertyListKey: PropertyListValue] = [:]) -> DefaultsStore {
    DefaultsStore(hub: ChangeHub(storage: MemoryStorage(values), suiteName: nil, suiteIsKnown: true))
  }

  deinit {
    hub.issueListeners.remove(ObjectIdentifier(self))
    for action in deallocationActions.withLock({ $0.actions.values }) { action() }
  }

  private let deallocationActions = Locked<(actions: [UInt64: @Sendable () -> Void], nextID: UInt64)>(([:], 0))

  /// Runs `action` when the store is deallocated (the Rx integration completes its streams then), unless the
  /// returned id is passed to ``forgetDeallocationAction(_:)`` first.
  func whenDeallocated(_ action: @escaping @Sendable () -> Void) -> UInt64 {
    deallocationActions.withLock { state in
      state.nextID += 1
      state.actions[state.nextID] = action
      return state.nextID
    }
  }

  func forgetDeallocationAction(_ id: UInt64) {
    _ = deallocationActions.withLock { $0.actions.removeValue(forKey: id) }
  }

  private func listenForFileIssues() {
    hub.issueListeners.add(ObjectIdentifier(self)) { [weak self] issue in self?.report(issue) }
  }

  /// Whether a suite name is acceptable. The name is a file name on Linux (`<name>.plist`), and it is typed and shown
  /// on terminals, so it is refused when it:
  /// - is empty, contains `/` or `..` (it would address a file outside the preferences folder);
  /// - starts with `.` (a hidden file, or `.plist` itself) or `-` (read as an option by command-line tools);
  /// - starts or ends with white space;
  /// - contains a control character (U+0000–U+001F, U+007F–U+009F), a line or paragraph separator, a
  ///   bidirectional-text control (they forge terminal output), or a glob character (`*`, `?`, `[`, `]`).
  ///
  /// `rdefaults` applies the same rule to domain names.
  ///
  /// - Parameter name: A suite name.
  /// - Returns: `true` when ``init(suiteName:)`` accepts the name (unless Foundation itself refuses it).
  public static func isValidSuiteName(_ name: String) -> Bool {
    guard let first = name.first, let last = name.last, !first.isWhitespace, !last.isWhitespace,
      first != ".", first != "-", !name.contains("/"), !name.contains("..")
    else { return false }
    for scalar in name.unicodeScalars where scalar.isUnsafeOnTerminals || globCharacters.contains(scalar) {
      return false
    }
    return true
  }

  private static let globCharacters: Set<Unicode.Scalar> = ["*", "?", "[", "]"]

  /// Receives the problems that reads and writes do not throw: type mismatches, values that could not be
  /// encoded, invalid key names, an unreadable suite file. `nil` (the default) ignores them.
  ///
  /// Setting a handler first hands it the file problems found before it was set (a suite's file is checked
  /// when the first store over it is made).
  ///
  /// The handler runs on the thread that found the problem, never under a lock of the library: the reading or
  /// writing thread for a value problem; for a file problem, the thread that saved or reloaded the suite, which
  /// can be the background save, so a report may arrive just after a ``flush()`` that raced with it returns.
  ///
  /// ```swift
  /// store.issueHandler = { issue in logger.warning("\(issue)") }
  /// ```
  public var issueHandler: (@Sendable (DefaultsError) -> Void)? {
    get { issueHandlerStorage.withLock { $0 } }
    set {
      issueHandlerStorage.withLock { $0 = newValue }
      if let newValue { for issue in hub.foundFileIssues { newValue(issue) } }
    }
  }

  func report(_ issue: DefaultsError) {
    issueHandler?(issue)
  }

  // MARK: Reading and writing

  /// The key's value: the stored value, or the key's default when the key is absent or holds another type
  /// (reported to ``issueHandler``). Setting writes the value and notifies the key's observers if it changed;
  /// setting `nil` removes the key.
  ///
  /// - Parameter key: The key.
  public subscript<Value>(key: DefaultsKey<Value>) -> Value {
    get {
      let object = stored(for: key)
      // The common case, and the hot path, apart from the rest (whose generic types, such as decode's `Result`, are
      // looked up at each call): storage hands back a value of exactly the key's type, which the type check proves
      // the cast finds.
      if let object, ObjectIdentifier(type(of: object)) == ObjectIdentifier(Value.self) { return object as! Value }
      return decodedOrDecoding(object, for: key)
    }
    set {
      do { try set(newValue, for: key) } catch { report(error) }
    }
  }

  /// The key's value, or an error saying why the stored value could not be read.
  ///
  /// - Parameter key: The key.
  /// - Returns: The stored value, or the key's default when the key is absent.
  /// - Throws: ``DefaultsError/typeMismatch(key:expected:found:)`` when the key holds another type;
  ///   ``DefaultsError/invalidKey(_:)`` for an empty key name.
  public func value<Value>(for key: DefaultsKey<Value>) throws(DefaultsError) -> Value {
    try decode(stored(for: key), for: key).get()
  }

  /// Writes a value; notifies the key's observers if the stored value changed. Writing `nil` removes the key.
  ///
  /// - Parameters:
  ///   - value: The new value.
  ///   - key: The key.
  /// - Throws: ``DefaultsError/encodingFailed(key:type:reason:)`` when the value has no stored form, or, in a file
  ///   store, holds text XML 1.0 cannot carry (the stored value is kept); ``DefaultsError/invalidKey(_:)`` for an
  ///   empty key name;
  ///   ``DefaultsError/domainTooLarge(key:size:limit:)`` on iOS, iPadOS, watchOS, visionOS and tvOS when the value
  ///   would take the suite to the size the platform refuses (the stored value is kept).
  public func set<Value>(_ value: Value, for key: DefaultsKey<Value>) throws(DefaultsError) {
    let write = try storageWrite(of: value, for: key)
    if let refusal = hub.write(write, forKey: key.name) { throw refusal }
  }

  /// Removes the key, so reads give its default again; notifies its observers if it held a value.
  ///
  /// - Parameter key: The key.
  public func reset<Value>(_ key: DefaultsKey<Value>) {
    guard !key.name.isEmpty else { return report(.invalidKey(key.name)) }
    hub.write(.remove, forKey: key.name)
  }

  /// Brings reads and observers up to date with the suite at once: when it returns, they reflect every save another
  /// process completed before the call, and every plain `UserDefaults` write of this process.
  ///
  /// On Linux the suite's file is reloaded if it is not as this process last saved or loaded it (another process's
  /// save arrives on its own within milliseconds too: through the folder watch while the suite is observed, at the
  /// next read otherwise; `refresh()` makes it hold now). Then
  /// the observed keys are re-read and the observers of those that changed are told: this is how a plain
  /// `UserDefaults.set` in this process, which posts nothing on Linux, reaches observers. Keys nobody observes are
  /// not read. A change another thread found first (a save's or the folder watch's re-read) is told by that thread:
  /// the observer may hear it just after `refresh()` returns, never an older value after it.
  public func refresh() {
    hub.reload()
  }

  /// Saves pending writes to disk now; a failure goes to ``issueHandler`` (use ``save()`` to handle it here).
  ///
  /// Writes are saved on their own at most 100 ms later (and at normal exit) anyway; `flush()` is for when
  /// the process may be killed right after the write. On Linux the save holds an advisory lock on
  /// `<suite>.plist.lock`, so processes using the library never lose each other's keys, and replaces the file
  /// atomically: whenever the process dies, the file holds every key of the last completed save. (A plain
  /// `UserDefaults.synchronize()` rewrites the file in place, as corelibs does: prefer `flush()`.)
  public func flush() {
    hub.saveReportingFailure()
  }

  /// Saves pending writes to disk now, or throws why it could not.
  ///
  /// ```swift
  /// do { try store.save() } catch { showAlert("Settings could not be saved: \(error)") }
  /// ```
  ///
  /// - Throws: ``DefaultsError/saveFailed(path:reason:)`` when the file could not be written (no space left, a
  ///   read-only folder, a name too long for the file system, …). The file is then as it was, and the writes stay
  ///   pending: the next save tries them again.
  public func save() throws(DefaultsError) {
    try hub.save()
  }

  // MARK: Properties

  /// A two-way handle on a key: read and write ``DefaultsProperty/value``, observe it, stream it, bind it.
  ///
  /// - Parameter key: The key.
  /// - Returns: A property over this store; making one is cheap.
  public func property<Value>(_ key: DefaultsKey<Value>) -> DefaultsProperty<Value> {
    DefaultsProperty(store: self, key: key)
  }

  // MARK: Internals shared with properties and observers

  /// Registers a handler for a key's changes.
  func observe<Value>(
    _ key: DefaultsKey<Value>, initial: Bool, handler: @escaping @Sendable (Value) -> Void
  ) -> DefaultsObservation {
    guard !key.name.isEmpty else {
      report(.invalidKey(key.name))
      if initial { handler(key.defaultValue) }
      return DefaultsObservation {}
    }
    let observer = KeyObserver(store: self, key: key, handler: handler)
    observer.start(initial: initial)
    return DefaultsObservation(ending: observer)
  }
}
