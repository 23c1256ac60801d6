import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

extension DefaultsKeys {
  fileprivate static let runs = DefaultsKey<Int>("runs", default: 0)
  fileprivate static let level = DefaultsKey<Int>("level", default: 1)
}

/// Steps that count their runs in `runs`.
private let countingStep = DefaultsMigration.custom("count-runs") { tx in tx[.runs] += 1 }

@Suite struct MigrationTests {
  @Test(arguments: Storage.allCases) func renameKeepsTheValueAndDropsTheOldKey(_ storage: Storage) throws {
    let (store, issues) = makeStore(storage)
    store.userDefaultsOrMemory(set: 0.25, forKey: "volumeLevel")
    let seen = Recorder<Double>()
    let token = store.property(.volume).observe { seen.append($0) }
    #expect(try store.migrate([.rename("volumeLevel", to: .volume)]) == ["rename volumeLevel to volume"])
    #expect(store[.volume] == 0.25)
    #expect(store.hub.storage.value(forKey: "volumeLevel") == nil)
    #expect(seen.values == [0.5, 0.25])
    #expect(
      store.hub.storage.value(forKey: DefaultsStore.migrationsKey) == .array([.string("rename volumeLevel to volume")]))
    #expect(issues.values.isEmpty)
    token.cancel()
  }

  @Test(arguments: Storage.allCases) func convertChangesTheStoredType(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    store.userDefaultsOrMemory(set: 1, forKey: "theme")
    try store.migrate([.convert(.theme, from: Int.self) { $0 == 1 ? .dark : .light }])
    #expect(store[.theme] == .dark)
    #expect(store.hub.storage.value(forKey: "theme") == .string("dark"))
  }

  @Test(arguments: Storage.allCases) func customStepsRunInOrderInOneEdit(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    let applied = try store.migrate([
      .custom("first") { tx in tx[.name] = "a" },
      .custom("second") { tx in tx[.name] += "b" },
      countingStep,
    ])
    #expect(applied == ["first", "second", "count-runs"])
    #expect(store[.name] == "ab")
    #expect(store[.runs] == 1)
  }

  /// A step whose source key is absent writes nothing, and is recorded: it does not run when the key appears.
  @Test(arguments: Storage.allCases) func anAbsentSourceIsANoOpThatIsRecorded(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    let steps: [DefaultsMigration] = [
      .rename("volumeLevel", to: .volume), .convert(.theme, from: Int.self) { _ in .dark },
    ]
    #expect(try store.migrate(steps).count == 2)
    #expect(store.keys == [])
    #expect(store.hub.storage.value(forKey: "volume") == nil)
    store.userDefaultsOrMemory(set: 0.9, forKey: "volumeLevel")
    #expect(try store.migrate(steps) == [])
    #expect(store[.volume] == 0.5)
  }

  /// A value of the wrong type stops the migration with an error naming the step and the key; no step of the call
  /// is applied or recorded (the suite's file is byte for byte as before: ``aWrongTypeLeavesTheSuiteFileAsItWas()``).
  @Test(arguments: Storage.allCases) func aWrongTypeStopsWithTheSuiteUnchanged(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    store.userDefaultsOrMemory(set: "not a number", forKey: "volumeLevel")
    store[.level] = 3
    store.flush()
    for steps: [DefaultsMigration] in [
      [countingStep, .rename("volumeLevel", to: .volume)],
      [
        countingStep, .convert(.theme, from: Int.self) { _ in .dark }, .convert(.volume, from: Int.self) { Double($0) },
      ],
    ] {
      store.userDefaultsOrMemory(set: "text", forKey: "theme")
      store.flush()
      let expected = store.hub.storage.snapshot()
      #expect {
        try store.migrate(steps)
      } throws: { error in
        guard case .migrationFailed(let step, let key, let reason)? = error as? DefaultsError else { return false }
        return (step == "rename volumeLevel to volume" && key == "volumeLevel" && reason.contains("String"))
          || (step == "convert theme from Int" && key == "theme" && reason.contains("String"))
      }
      #expect(store.hub.storage.snapshot() == expected)
    }
    #expect(store[.runs] == 0)
    #expect(store[.level] == 3)
  }

  /// A migration stopped by a value of the wrong type leaves the suite's file byte for byte as it was (Linux, where
  /// the library writes it).
  @Test(.linuxOnly) func aWrongTypeLeavesTheSuiteFileAsItWas() throws {
    let (store, _) = makeStore(.suite)
    store.userDefaultsOrMemory(set: "not a number", forKey: "volumeLevel")
    store[.level] = 3
    store.flush()
    let name = try #require(store.suiteName)
    let before = try #require(suiteFileBytes(name))
    #expect(throws: DefaultsError.self) { try store.migrate([countingStep, .rename("volumeLevel", to: .volume)]) }
    store.flush()
    #expect(suiteFileBytes(name) == before)
  }

  /// A custom step that throws stops the migration the same way; the error says why.
  @Test(arguments: Storage.allCases) func aThrowingCustomStepStopsTheMigration(_ storage: Storage) {
    struct Broken: Error, CustomStringConvertible { var description: String { "broken on purpose" } }
    let (store, _) = makeStore(storage)
    #expect(throws: DefaultsError.migrationFailed(step: "boom", key: nil, reason: "broken on purpose")) {
      try store.migrate([countingStep, .custom("boom") { _ in throw Broken() }])
    }
    #expect(store[.runs] == 0)
    #expect(store.hub.storage.value(forKey: DefaultsStore.migrationsKey) == nil)
  }

  /// A second call does nothing; a step added to the list later runs alone.
  @Test(arguments: Storage.allCases) func migrateIsIdempotentAndRunsOnlyNewSteps(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    var steps = [countingStep, .custom("append-a") { tx in tx[.name] += "a" }]
    #expect(try store.migrate(steps).count == 2)
    #expect(try store.migrate(steps) == [])
    #expect(store[.runs] == 1)
    #expect(store[.name] == "a")
    steps.append(.custom("append-b") { tx in tx[.name] += "b" })
    #expect(try store.migrate(steps) == ["append-b"])
    #expect(store[.runs] == 1)
    #expect(store[.name] == "ab")
    #expect(
      store.hub.storage.value(forKey: DefaultsStore.migrationsKey)
        == .array(["count-runs", "append-a", "append-b"].map(PropertyListValue.string)))
  }

  @Test func twoStepsWithOneIdentityAreRefused() {
    let store = DefaultsStore.inMemory()
    #expect(throws: DefaultsError.self) { try store.migrate([countingStep, countingStep]) }
    #expect(throws: DefaultsError.self) { try store.migrate([.rename("volume", to: .volume)]) }
    #expect(store[.runs] == 0)
  }

  /// The reserved key is not one of the user's keys: `keys` leaves it out and `removeAll()` keeps it, so the
  /// migrations are not applied again.
  @Test(arguments: Storage.allCases) func theReservedKeyIsNotAUserKey(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    store[.level] = 2
    try store.migrate([countingStep])
    #expect(store.keys == ["level", "runs"])
    store.removeAll()
    #expect(store.keys == [])
    #expect(try store.migrate([countingStep]) == [])
    #expect(store[.runs] == 0)
    store.userDefaultsOrMemory(set: "garbage", forKey: DefaultsStore.migrationsKey)
    #expect(throws: DefaultsError.self) { try store.migrate([countingStep]) }
  }

  /// Values other libraries stored read as they are: sindresorhus/Defaults keeps a `Codable` value as JSON text
  /// and a `RawRepresentable` one as its raw value; SwiftUI's `@AppStorage` keeps raw values, numbers, strings and
  /// Booleans natively. Defaults' JSON form of a plain `Codable` enum (`"\"dark\""`) needs a conversion.
  @Test(arguments: Storage.allCases) func otherLibrariesValuesReadAsTheyAre(_ storage: Storage) throws {
    let (store, issues) = makeStore(storage)
    // Defaults: `Defaults.Key<Layout>` with `Layout: Codable, Defaults.Serializable` stores JSON text.
    store.userDefaultsOrMemory(set: #"{"title":"side","columns":3}"#, forKey: "layout")
    // Defaults and @AppStorage: a `String` raw-value enum stores its raw value.
    store.userDefaultsOrMemory(set: "light", forKey: "theme")
    // @AppStorage: Bool, Int, Double, String as themselves.
    store.userDefaultsOrMemory(set: true, forKey: "flag")
    store.userDefaultsOrMemory(set: 7, forKey: "count")
    store.userDefaultsOrMemory(set: 0.75, forKey: "volume")
    store.userDefaultsOrMemory(set: Data([1, 2]), forKey: "blob")
    // @AppStorage: an `Int` raw-value enum stores its raw value.
    store.userDefaultsOrMemory(set: 2, forKey: "priority")
    #expect(store[.layout] == Layout(columns: 3, title: "side"))
    #expect(store[.theme] == .light)
    #expect(store[.flag] == true)
    #expect(store[.count] == 7)
    #expect(store[.volume] == 0.75)
    #expect(store[DefaultsKey<Data>("blob", default: Data())] == Data([1, 2]))
    #expect(store[DefaultsKey<Priority>("priority", default: .low)] == .high)
    #expect(issues.values.isEmpty)
    // Defaults: a `Codable` enum that is not `Defaults.Serializable` through its raw value is stored as JSON text.
    store.userDefaultsOrMemory(set: #""dark""#, forKey: "theme")
    #expect(store[.theme] == .system)  // the default: "\"dark\"" is no raw value
    try store.migrate([
      .convert(.theme, from: String.self) { json in
        try JSONDecoder().decode(Theme.self, from: Data(json.utf8))
      }
    ])
    #expect(store[.theme] == .dark)
  }
}

extension Theme: Codable {}

private enum Priority: Int, DefaultsValue {
  case low = 0, medium, high
}

extension DefaultsStore {
  /// Writes a value as another library (or a plain `UserDefaults` call) would: past the library.
  fileprivate func userDefaultsOrMemory(set value: Any, forKey key: String) {
    if let memory = hub.storage as? MemoryStorage {
      memory.writeInProcess(PropertyListValue(foundationObject: value), forKey: key)
    } else {
      userDefaults.set(value, forKey: key)
    }
  }
}
