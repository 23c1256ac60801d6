/// A stored property backed by a key of a store: `@Default(.volume) var volume`.
///
/// Reading and writing the property read and write the store; `$volume` is the key's ``DefaultsProperty``, to
/// observe, stream or bind it.
///
/// ```swift
/// final class Settings {
///   @Default(.volume) var volume                  // DefaultsStore.standard
///   @Default(.theme, store: group) var theme      // another store
/// }
/// let token = settings.$volume.observe { print($0) }
/// ```
///
/// In an `@Observable` class, mark it `@ObservationIgnored`: the macro then leaves it alone, and reading it still
/// registers with Observation, because it reads ``DefaultsProperty/value``, which is tracked. A SwiftUI view that
/// reads such a model re-renders when the key changes, from anywhere, other processes included.
///
/// ```swift
/// @Observable final class PlayerModel {
///   @ObservationIgnored @Default(.volume) var volume
/// }
/// ```
///
/// A class that conforms to `Sendable` cannot hold one (a property wrapper's storage is a `var`); keep the
/// ``DefaultsProperty`` itself in a `let` there: `let volume = DefaultsStore.standard.property(.volume)`.
@propertyWrapper
public struct Default<Value: DefaultsValue>: Sendable {
  /// The key's two-way handle, shared by every read and write through the wrapper.
  public let projectedValue: DefaultsProperty<Value>

  /// A property backed by `key` in `store`.
  ///
  /// - Parameters:
  ///   - key: The key.
  ///   - store: The store; ``DefaultsStore/standard`` unless given.
  public init(_ key: DefaultsKey<Value>, store: DefaultsStore = .standard) {
    projectedValue = store.property(key)
  }

  /// The key's value; setting it writes the store (and does not mutate the enclosing value).
  public var wrappedValue: Value {
    get { projectedValue.value }
    nonmutating set { projectedValue.value = newValue }
  }
}
