import Foundation
import Observation
import TestSupport
import Testing

@testable import ReactiveDefaults

final class SettingsObject {
  @Default<Double> var volume: Double
  @Default<Theme> var theme: Theme

  init(store: DefaultsStore) {
    _volume = Default(.volume, store: store)
    _theme = Default(.theme, store: store)
  }
}

struct SettingsValue {
  @Default<Int> var count: Int
  init(store: DefaultsStore) { _count = Default(.count, store: store) }
}

@Observable final class PlayerModel {
  @ObservationIgnored @Default<Double> var volume: Double
  init(store: DefaultsStore) { _volume = Default(.volume, store: store) }
}

@Suite struct PropertyWrapperTests {
  @Test(arguments: Storage.allCases) func readsAndWritesTheStoreInAClassAndAStruct(storage: Storage) {
    let (store, _) = makeStore(storage)
    let object = SettingsObject(store: store)
    #expect(object.volume == 0.5)
    object.volume = 0.9
    #expect(store[.volume] == 0.9)
    object.theme = .dark
    #expect(store[.theme] == .dark)
    let value = SettingsValue(store: store)
    value.count = 4  // a `let` struct: setting writes the store, not the struct
    #expect(store[.count] == 4 && value.count == 4)
  }

  @Test func theProjectedValueIsTheKeysProperty() {
    let (store, _) = makeStore(.memory)
    let object = SettingsObject(store: store)
    #expect(object.$volume.key === DefaultsKeys.volume)
    #expect(object.$volume.store.hub === store.hub)
    let seen = Recorder<Double>()
    let token = object.$volume.observe { seen.append($0) }
    store[.volume] = 0.2
    #expect(seen.values == [0.5, 0.2])
    #expect(store.hub.observerCount == 1)
    withExtendedLifetime(token) {}
  }

  /// `@ObservationIgnored @Default` in an `@Observable` class is tracked: the wrapper reads the property, which
  /// is `Observable` itself.
  @Test(arguments: Storage.allCases) func anObservableModelIsTracked(storage: Storage) async {
    let (store, _) = makeStore(storage)
    let model = PlayerModel(store: store)
    let changed = trackObservation { _ = model.volume }
    store[.volume] = 0.7
    #expect(await changed.wait { $0.count == 1 })
    #expect(model.volume == 0.7)
  }
}
