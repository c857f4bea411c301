console.log('anneal');
