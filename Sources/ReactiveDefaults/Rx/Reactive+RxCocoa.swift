#if RxCocoa
  public import Foundation
  public import RxCocoa
  public import RxSwift

  extension DefaultsStore: ReactiveCompatible {}

  extension Reactive where Base: UserDefaults {
    /// A key of this `UserDefaults` as a `ControlProperty`: the value (`nil` while absent) and each distinct
    /// change, on the main scheduler; elements bound into it are written.
    ///
    /// Unlike the `didChangeNotification` recipe it emits on Linux, emits only for its key, never repeats `nil`,
    /// and sees writes from other processes.
    ///
    /// ```swift
    /// let volume: ControlProperty<Double?> = UserDefaults.standard.rx.default(forKey: "volume")
    /// ```
    ///
    /// - Parameter key: The key's name.
    /// - Returns: The key as a `ControlProperty`.
    public func `default`<E: DefaultsValue & Equatable>(forKey key: String) -> ControlProperty<E?> {
      makeControlProperty(DefaultsKey<E?>(key), of: DefaultsStore(base), retainingStore: true)
    }

    /// A URL key of this `UserDefaults` as a `ControlProperty`, stored as Foundation's `url(forKey:)` reads it.
    ///
    /// ```swift
    /// chosenDocuments.bind(to: UserDefaults.standard.rx.url(forKey: "documentUrl")).disposed(by: bag)
    /// ```
    ///
    /// - Parameter key: The key's name.
    /// - Returns: The key as a `ControlProperty`.
    public func url(forKey key: String) -> ControlProperty<URL?> {
      makeControlProperty(DefaultsKey<URL?>(key), of: DefaultsStore(base), retainingStore: true)
    }
  }

  extension Reactive where Base: DefaultsStore {
    /// A key of this store as a `ControlProperty`: subscription and delivery on the main scheduler, no errors,
    /// completion when the store is deallocated; elements bound into it are written.
    ///
    /// ```swift
    /// store.rx.property(.volume).subscribe(onNext: { print($0) }).disposed(by: bag)
    /// ```
    ///
    /// - Parameter key: The key.
    /// - Returns: The key as a `ControlProperty`.
    public func property<Value>(_ key: DefaultsKey<Value>) -> ControlProperty<Value> {
      makeControlProperty(key, of: base, retainingStore: false)
    }
  }

  /// A key as a `ControlProperty`. `UserDefaults.rx` makes a store for the call and keeps it while the property
  /// lives; `store.rx` holds its store weakly and completes when the store is deallocated.
  private func makeControlProperty<Value>(
    _ key: DefaultsKey<Value>, of store: DefaultsStore, retainingStore: Bool
  ) -> ControlProperty<Value> {
    // A weak reference in a class box: `weak let` (SE-0481) needs Swift 6.2, and the package promises 6.1.
    let weakStore = WeakStore(store)
    let retained = retainingStore ? store : nil
    let values = Observable<Value>.create { observer in
      guard let store = retained ?? weakStore.store else {
        observer.onCompleted()
        return Disposables.create()
      }
      let sink = SerialObserver(observer)
      let token = store.property(key).observe { sink.observer.onNext($0) }
      let completion = store.whenDeallocated { sink.observer.onCompleted() }
      return Disposables.create {
        token.cancel()
        (retained ?? weakStore.store)?.forgetDeallocationAction(completion)
      }
    }
    .subscribe(on: ConcurrentMainScheduler.instance)
    .observe(on: MainScheduler.instance)
    // Writes are safe from any thread, so the sink writes where the element arrives.
    let valueSink = AnyObserver<Value> { event in
      guard case .next(let value) = event, let store = retained ?? weakStore.store else { return }
      store[key] = value
    }
    return ControlProperty(values: values, valueSink: valueSink)
  }

  /// A store held weakly, shared by the closures of one `ControlProperty`.
  private final class WeakStore: Sendable {
    nonisolated(unsafe) weak var store: DefaultsStore?  // written once, in init
    init(_ store: DefaultsStore) { self.store = store }
  }
#endif
