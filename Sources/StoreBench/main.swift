print("StoreBench")
