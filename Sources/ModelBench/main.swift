print("ModelBench")
